#!/bin/bash
# Lockbox 28, run once: bugs first, then the sweep with notebooks. Code: $1 (a frozen tree, default /tmp/lb28code),
# output: $2 (default /work/eval/lb28run).
exec "$(dirname "$0")/../run_lockbox.sh" 28 "$@"
