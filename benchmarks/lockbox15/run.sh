#!/bin/bash
# Lockbox 15, run once: bugs first, then the sweep with notebooks. Code: /tmp/lb15code (a frozen worktree).
. /work/venv/bin/activate
cd /tmp/lb15code
export PYTHONPATH=/tmp/lb15code GRADLINT_MIRROR=/work/.mirror
mkdir -p /work/eval/lb15run
date -u > /work/eval/lb15run/started
for part in f g h i; do
  python benchmarks/realbugs/run.py bugs --manifest benchmarks/lockbox15/bugs_$part.toml --show > /work/eval/lb15run/bugs_$part.txt 2>&1
done
date -u > /work/eval/lb15run/bugs_done
for part in s1 s2 s3; do
  python benchmarks/realbugs/run.py sweep --manifest benchmarks/lockbox15/sweep_$part.toml --verdicts /nonexistent.toml --set all --jobs 2 --notebooks --show > /work/eval/lb15run/sweep_$part.txt 2>&1
done
date -u > /work/eval/lb15run/done
