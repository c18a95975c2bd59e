#!/bin/bash
# Lockbox 32, run once: bugs first, then the sweep with notebooks. Code: $1 (a frozen tree, default /tmp/lb32code),
# output: $2 (default /work/eval/lb32run).
exec "$(dirname "$0")/../run_lockbox.sh" 32 "$@"
