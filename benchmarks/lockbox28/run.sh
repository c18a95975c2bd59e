#!/bin/bash
# Lockbox 28, run once: bugs first, then the sweep with notebooks. Code: $1 (a frozen tree, default /tmp/lb28code),
# output: $2 (default /work/eval/lb28run).
. /work/venv/bin/activate
CODE=${1:-/tmp/lb28code}; OUT=${2:-/work/eval/lb28run}
cd $CODE
export PYTHONPATH=$CODE GRADLINT_MIRROR=/work/.mirror
mkdir -p $OUT
date -u > $OUT/started
for b in b1 b2; do python benchmarks/realbugs/run.py bugs --manifest /work/main/benchmarks/lockbox28/bugs_$b.toml --show > $OUT/bugs_$b.txt 2>&1; done
date -u > $OUT/bugs_done
for part in s1 s2 s3 s4 s5 s6; do
  python benchmarks/realbugs/run.py sweep --manifest /work/main/benchmarks/lockbox28/sweep_$part.toml --verdicts /nonexistent.toml --set all --jobs 2 --notebooks --show > $OUT/sweep_$part.txt 2>&1
done
date -u > $OUT/done
