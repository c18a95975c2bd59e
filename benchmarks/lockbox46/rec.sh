#!/bin/bash
# rec.sh: reads lines "NAME<TAB>fetch answer" from stdin; logs to fetchlog.txt; counts via count1.sh
cd "$(dirname "$0")"
while IFS=$'\t' read -r name ans; do
  [ -z "$name" ] && continue
  echo -e "$name\t$ans" >> fetchlog.txt
  case "$ans" in
    /work/.mirror/*) ./count1.sh "$name" "$ans" ;;
    "No snapshot"*) echo "$name DROP nosnapshot" >> counts.txt ;;
    *) echo "$name DROP ${ans:0:90}" | tr -s ' ' >> counts.txt ;;
  esac
done
