#!/bin/bash
# r.sh: lines "NAME ok" (fetch returned /work/.mirror/owner+name/repo) or "NAME none" (no snapshot) or "NAME other text"; passes to rec.sh
while read -r name st rest; do
  [ -z "$name" ] && continue
  case "$st" in
    ok) printf '%s\t%s\n' "$name" "/work/.mirror/${name/\//+}/repo" ;;
    none) printf '%s\t%s\n' "$name" "No snapshot of that repository can be had here." ;;
    *) printf "%s\t%s\n" "$name" "$(echo $st $rest)" ;;
  esac
done | ./rec.sh
echo calls $(wc -l < fetchlog.txt) kept $(grep -vc ' DROP ' counts.txt)
