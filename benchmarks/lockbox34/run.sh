#!/bin/bash
# Lockbox 34, run once: bugs first, then the sweep with notebooks. Code: $1 (a frozen tree, default /tmp/lb34code),
# output: $2 (default /work/eval/lb34run).
exec "$(dirname "$0")/../run_lockbox.sh" 34 "$@"
