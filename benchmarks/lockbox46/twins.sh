#!/bin/bash
# twins.sh: step 6. A kept repository (counts.txt order) is dropped when one of its root commits equals a root commit of
# an earlier kept one or of any other mirror on the machine (every /work/.mirror dir not itself kept), or when its set of
# counted training-file blob hashes is identical to an earlier kept one's. Output: twins.txt, kept_final.txt
cd "$(dirname "$0")"
: > twins.txt; : > kept_final.txt
declare -A kept roots blobs
while read -r name head py nb g; do [ "$head" = DROP ] || kept[$name]=1; done < counts.txt
for d in /work/.mirror/*/; do
  n=$(basename "$d"); n=${n/+//}
  [ -n "${kept[$n]:-}" ] && continue
  for c in "$d/repo/.git" "$d/repo"; do
    if git --git-dir="$c" rev-parse HEAD >/dev/null 2>&1; then
      for r in $(git --git-dir="$c" rev-list --max-parents=0 HEAD 2>/dev/null); do roots[$r]="${roots[$r]:-}${roots[$r]:+,}mirror:$n"; done
      break
    fi
  done
done
while read -r name head py nb g; do
  [ "$head" = DROP ] && continue
  twin=""
  for r in $(git --git-dir="$g" rev-list --max-parents=0 HEAD); do [ -n "${roots[$r]:-}" ] && twin="root commit $r shared with ${roots[$r]}"; done
  sig=$(comm -12 <(git --git-dir="$g" grep -l -F 'backward(' HEAD -- '*.py' | sed 's/^HEAD://' | sort) <(git --git-dir="$g" grep -l -F '.step(' HEAD -- '*.py' | sed 's/^HEAD://' | sort) \
        | while IFS= read -r f; do git --git-dir="$g" rev-parse "HEAD:$f"; done | sort | sha256sum | cut -c1-64)
  [ -z "$twin" ] && [ -n "${blobs[$sig]:-}" ] && twin="training-file blob set identical to kept:${blobs[$sig]}"
  if [ -n "$twin" ]; then echo "$name TWIN $twin" >> twins.txt; continue; fi
  for r in $(git --git-dir="$g" rev-list --max-parents=0 HEAD); do roots[$r]="kept:$name"; done
  blobs[$sig]="$name"
  echo "$name $head $py $nb $g" >> kept_final.txt
done < counts.txt
