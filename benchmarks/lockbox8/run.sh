#!/bin/bash
# Lockbox 8, run once: bugs first, then the sweep with notebooks. Code: /tmp/lb8code (a frozen worktree).
. /work/venv/bin/activate
cd /tmp/lb8code
export PYTHONPATH=/tmp/lb8code GRADLINT_MIRROR=/work/.mirror
date -u > /work/eval/lb8run/started
for part in a b c d; do
  python benchmarks/realbugs/run.py bugs --manifest benchmarks/lockbox8/bugs_$part.toml --show > /work/eval/lb8run/bugs_$part.txt 2>&1
done
date -u > /work/eval/lb8run/bugs_done
for part in s1 s2; do
  python benchmarks/realbugs/run.py sweep --manifest benchmarks/lockbox8/sweep_$part.toml --verdicts /nonexistent.toml --set all --jobs 2 --notebooks --show > /work/eval/lb8run/sweep_$part.txt 2>&1
done
date -u > /work/eval/lb8run/done
