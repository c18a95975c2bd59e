#!/bin/bash
# Lockbox 33, run once: bugs first, then the sweep with notebooks. Code: $1 (a frozen tree, default /tmp/lb33code),
# output: $2 (default /work/eval/lb33run).
exec "$(dirname "$0")/../run_lockbox.sh" 33 "$@"
