#!/bin/bash
# twins.sh [COUNTS OUT]: a kept repository whose root commit, or whose set of counted training-file blobs, equals another's (a kept
# one earlier in order, or any other mirror on the machine) is a twin: dropped. COUNTS default counts.txt, OUT default twins.txt (part s2: twins.sh counts_s2.txt twins_s2.txt)
counts=${1:-counts.txt}; out=${2:-twins.txt}; : > "$out"
declare -A roots blobs
for d in /work/.mirror/*; do
  name=$(basename "$d"); name=${name/+//}
  grep -q "^$name " "$counts" 2>/dev/null && continue
  for c in "$d/repo/.git" "$d/repo"; do
    if [ -d "$c" ] && git --git-dir="$c" rev-parse HEAD >/dev/null 2>&1; then
      for r in $(git --git-dir="$c" rev-list --max-parents=0 HEAD 2>/dev/null); do roots[$r]="$name"; done
      break
    fi
  done
done
while read -r name head py nb g; do
  [ "$head" = "DROP" ] && continue
  twin=""
  for r in $(git --git-dir="$g" rev-list --max-parents=0 HEAD); do [ -n "${roots[$r]:-}" ] && twin="root of ${roots[$r]}"; done
  files=$(comm -12 <(git --git-dir="$g" grep -l -F 'backward(' HEAD -- '*.py' | sort) <(git --git-dir="$g" grep -l -F '.step(' HEAD -- '*.py' | sort) | sed 's/^HEAD://')
  sig=$(for f in $files; do git --git-dir="$g" rev-parse "HEAD:$f"; done | sort | sha256sum | cut -c1-16)
  [ -z "$twin" ] && [ -n "${blobs[$sig]:-}" ] && twin="blobs of ${blobs[$sig]}"
  if [ -n "$twin" ]; then echo "$name TWIN $twin" >> "$out"; continue; fi
  for r in $(git --git-dir="$g" rev-list --max-parents=0 HEAD); do roots[$r]="$name"; done
  blobs[$sig]="$name"
done < "$counts"
