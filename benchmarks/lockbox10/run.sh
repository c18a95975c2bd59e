#!/bin/bash
# Lockbox 10, run once: bugs first, then the sweep with notebooks. Code: /tmp/lb10code (a frozen worktree).
. /work/venv/bin/activate
cd /tmp/lb10code
export PYTHONPATH=/tmp/lb10code GRADLINT_MIRROR=/work/.mirror
mkdir -p /work/eval/lb10run
date -u > /work/eval/lb10run/started
for part in a b c d e; do
  python benchmarks/realbugs/run.py bugs --manifest benchmarks/lockbox10/bugs_$part.toml --show > /work/eval/lb10run/bugs_$part.txt 2>&1
done
date -u > /work/eval/lb10run/bugs_done
for part in s1 s2; do
  python benchmarks/realbugs/run.py sweep --manifest benchmarks/lockbox10/sweep_$part.toml --verdicts /nonexistent.toml --set all --jobs 2 --notebooks --show > /work/eval/lb10run/sweep_$part.txt 2>&1
done
date -u > /work/eval/lb10run/done
