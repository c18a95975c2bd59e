#!/bin/bash
# count.sh [NAMES OUT]: for each name of NAMES (default to_fetch.txt), the mirror's HEAD, and the number of *.py (and *.ipynb) files holding both
# 'backward(' and '.step(' (names and counts only), into OUT (default counts.txt). Part s2: count.sh to_fetch_s2.txt counts_s2.txt
in=${1:-to_fetch.txt}; out=${2:-counts.txt}; : > $out
while read -r name; do
  [ -z "$name" ] && continue
  d=/work/.mirror/${name/\//+}
  g=""
  for c in "$d/repo/.git" "$d/repo"; do [ -d "$c" ] && git --git-dir="$c" rev-parse HEAD >/dev/null 2>&1 && { g=$c; break; }; done
  if [ -z "$g" ]; then echo "$name DROP nomirror" >> $out; continue; fi
  head=$(git --git-dir="$g" rev-parse HEAD)
  py=$(comm -12 <(git --git-dir="$g" grep -l -F 'backward(' HEAD -- '*.py' 2>/dev/null | sort) <(git --git-dir="$g" grep -l -F '.step(' HEAD -- '*.py' 2>/dev/null | sort) | wc -l)
  nb=$(comm -12 <(git --git-dir="$g" grep -l -F 'backward(' HEAD -- '*.ipynb' 2>/dev/null | sort) <(git --git-dir="$g" grep -l -F '.step(' HEAD -- '*.ipynb' 2>/dev/null | sort) | wc -l)
  if [ "$py" -ge 1 ] && [ "$py" -lt 400 ]; then echo "$name $head $py $nb $g" >> $out; else echo "$name DROP count=$py" >> $out; fi
done < "$in"
