#!/bin/bash
# Lockbox 14, run once: bugs first, then the sweep with notebooks. Code: /tmp/lb14code (a frozen worktree).
. /work/venv/bin/activate
cd /tmp/lb14code
export PYTHONPATH=/tmp/lb14code GRADLINT_MIRROR=/work/.mirror
mkdir -p /work/eval/lb14run
date -u > /work/eval/lb14run/started
for part in f g h i j k; do
  python benchmarks/realbugs/run.py bugs --manifest benchmarks/lockbox14/bugs_$part.toml --show > /work/eval/lb14run/bugs_$part.txt 2>&1
done
date -u > /work/eval/lb14run/bugs_done
for part in s1 s2 s3; do
  python benchmarks/realbugs/run.py sweep --manifest benchmarks/lockbox14/sweep_$part.toml --verdicts /nonexistent.toml --set all --jobs 2 --notebooks --show > /work/eval/lb14run/sweep_$part.txt 2>&1
done
date -u > /work/eval/lb14run/done
