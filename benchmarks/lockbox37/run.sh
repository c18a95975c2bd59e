#!/bin/bash
# Lockbox 37, run once: bugs first (none were mined), then the sweep with notebooks. Code: $1 (a frozen tree, default
# /tmp/lb37code), output: $2 (default /work/eval/lb37run).
exec "$(dirname "$0")/../run_lockbox.sh" 37 "$@"
