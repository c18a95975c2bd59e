#!/bin/bash
# Lockbox 39, run once: bugs first (none were mined), then the sweep with notebooks. Code: $1 (a frozen tree, default
# /tmp/lb39code), output: $2 (default /work/eval/lb39run).
exec "$(dirname "$0")/../run_lockbox.sh" 39 "$@"
