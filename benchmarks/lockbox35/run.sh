#!/bin/bash
# Lockbox 35, run once: bugs first, then the sweep with notebooks. Code: $1 (a frozen tree, default /tmp/lb35code),
# output: $2 (default /work/eval/lb35run).
exec "$(dirname "$0")/../run_lockbox.sh" 35 "$@"
