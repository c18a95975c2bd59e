#!/bin/bash
# Lockbox 21, run once: bugs first, then the sweep with notebooks. Code: /tmp/lb21code (a frozen worktree).
. /work/venv/bin/activate
cd /tmp/lb21code
export PYTHONPATH=/tmp/lb21code GRADLINT_MIRROR=/work/.mirror
mkdir -p /work/eval/lb21run
date -u > /work/eval/lb21run/started
for part in q; do
  python benchmarks/realbugs/run.py bugs --manifest benchmarks/lockbox21/bugs_$part.toml --show > /work/eval/lb21run/bugs_$part.txt 2>&1
done
date -u > /work/eval/lb21run/bugs_done
for part in s1 s2 s3 s4 s5 s6; do
  python benchmarks/realbugs/run.py sweep --manifest benchmarks/lockbox21/sweep_$part.toml --verdicts /nonexistent.toml --set all --jobs 2 --notebooks --show > /work/eval/lb21run/sweep_$part.txt 2>&1
done
date -u > /work/eval/lb21run/done
