#!/bin/bash
# Lockbox 7, run once: bugs first, then the sweep with notebooks. Code: /tmp/lb7code (a frozen worktree).
. /work/venv/bin/activate
cd /tmp/lb7code
export PYTHONPATH=/tmp/lb7code GRADLINT_MIRROR=/work/.mirror
date -u > /work/eval/lb7run/started
for part in a b c d; do
  python benchmarks/realbugs/run.py bugs --manifest benchmarks/lockbox7/bugs_$part.toml --show > /work/eval/lb7run/bugs_$part.txt 2>&1
done
date -u > /work/eval/lb7run/bugs_done
for part in s1 s2; do
  python benchmarks/realbugs/run.py sweep --manifest benchmarks/lockbox7/sweep_$part.toml --verdicts /nonexistent.toml --set all --jobs 2 --notebooks --show > /work/eval/lb7run/sweep_$part.txt 2>&1
done
date -u > /work/eval/lb7run/done
