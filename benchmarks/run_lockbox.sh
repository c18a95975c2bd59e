#!/bin/bash
# run_lockbox.sh N [CODE] [OUT]: run lockbox N once, on a frozen tree of the code (CODE, default /tmp/lbNcode), into
# OUT (default /work/eval/lbNrun): its bugs (bugs_*.toml) first, then every sweep part (sweep_s*.toml) with notebooks.
# The manifests are read from this checkout's benchmarks/lockboxN; the mirrors from /work/.mirror.
set -u
N=$1; HERE=$(cd "$(dirname "$0")" && pwd); BOX=$HERE/lockbox$N
CODE=${2:-/tmp/lb${N}code}; OUT=${3:-/work/eval/lb${N}run}
[ -f /work/venv/bin/activate ] && . /work/venv/bin/activate
cd "$CODE" || exit 2
export PYTHONPATH=$CODE GRADLINT_MIRROR=/work/.mirror
mkdir -p "$OUT"
date -u > "$OUT/started"
for manifest in "$BOX"/bugs_*.toml; do
  python benchmarks/realbugs/run.py bugs --manifest "$manifest" --show > "$OUT/$(basename "$manifest" .toml).txt" 2>&1
done
date -u > "$OUT/bugs_done"
for manifest in "$BOX"/sweep_s*.toml; do
  python benchmarks/realbugs/run.py sweep --manifest "$manifest" --verdicts /nonexistent.toml --set all --jobs 2 --notebooks \
    --show > "$OUT/$(basename "$manifest" .toml).txt" 2>&1
done
date -u > "$OUT/done"
