#!/bin/bash
# Lockbox 29, run once: bugs first, then the sweep with notebooks. Code: $1 (a frozen tree, default /tmp/lb29code),
# output: $2 (default /work/eval/lb29run).
exec "$(dirname "$0")/../run_lockbox.sh" 29 "$@"
