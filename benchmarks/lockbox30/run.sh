#!/bin/bash
# Lockbox 30, run once: bugs first, then the sweep with notebooks. Code: $1 (a frozen tree, default /tmp/lb30code),
# output: $2 (default /work/eval/lb30run).
exec "$(dirname "$0")/../run_lockbox.sh" 30 "$@"
