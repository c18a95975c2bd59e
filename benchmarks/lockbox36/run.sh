#!/bin/bash
# Lockbox 36, run once: bugs first (none were mined), then the sweep with notebooks. Code: $1 (a frozen tree, default
# /tmp/lb36code), output: $2 (default /work/eval/lb36run).
exec "$(dirname "$0")/../run_lockbox.sh" 36 "$@"
