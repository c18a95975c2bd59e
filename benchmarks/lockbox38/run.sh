#!/bin/bash
# Lockbox 38, run once: bugs first (none were mined), then the sweep with notebooks. Code: $1 (a frozen tree, default
# /tmp/lb38code), output: $2 (default /work/eval/lb38run).
exec "$(dirname "$0")/../run_lockbox.sh" 38 "$@"
