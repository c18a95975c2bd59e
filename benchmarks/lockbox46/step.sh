#!/bin/bash
# step.sh START st1 st2 ...: feeds order.txt lines START.. with the given statuses (ok|none|/work/.mirror/... path|other text with _ for spaces) to r.sh; prints next 12 names and the time
cd "$(dirname "$0")"
s=$1; shift; n=$#
paste -d' ' <(sed -n "${s},$((s+n-1))p" order.txt) <(for a in "$@"; do case "$a" in /*) echo "$a";; *) echo "$a" | tr '_' ' ';; esac; done) | ./r.sh
e=$((s+n)); sed -n "${e},$((e+11))p" order.txt | cat -n | sed "s/^ */$e+/"; date -u
