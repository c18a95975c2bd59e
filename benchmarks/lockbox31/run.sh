#!/bin/bash
# Lockbox 31, run once: bugs first, then the sweep with notebooks. Code: $1 (a frozen tree, default /tmp/lb31code),
# output: $2 (default /work/eval/lb31run).
exec "$(dirname "$0")/../run_lockbox.sh" 31 "$@"
