#!/bin/bash
# count1.sh NAME [DIR]: appends one line to counts.txt: "NAME COMMIT training_files notebooks DIR" or "NAME DROP reason".
# training_files = *.py files at HEAD containing both 'backward(' and '.step(' (git grep -l -F, comm -12); notebooks likewise *.ipynb.
cd "$(dirname "$0")"
name=$1; d=${2:-/work/.mirror/${name/\//+}/repo}
if ! git --git-dir="$d" rev-parse HEAD >/dev/null 2>&1; then echo "$name DROP ${3:-nosnapshot}" >> counts.txt; exit; fi
head=$(git --git-dir="$d" rev-parse HEAD)
py=$(comm -12 <(git --git-dir="$d" grep -l -F 'backward(' HEAD -- '*.py' 2>/dev/null | sort) <(git --git-dir="$d" grep -l -F '.step(' HEAD -- '*.py' 2>/dev/null | sort) | wc -l)
nb=$(comm -12 <(git --git-dir="$d" grep -l -F 'backward(' HEAD -- '*.ipynb' 2>/dev/null | sort) <(git --git-dir="$d" grep -l -F '.step(' HEAD -- '*.ipynb' 2>/dev/null | sort) | wc -l)
if [ "$py" -ge 1 ] && [ "$py" -lt 400 ]; then echo "$name $head $py $nb $d" >> counts.txt; else echo "$name DROP count=$py notebooks=$nb" >> counts.txt; fi
