#!/bin/bash
# Lockbox 24, run once: bugs first, then the sweep with notebooks. Code: /tmp/lb24code (a frozen worktree).
. /work/venv/bin/activate
cd /tmp/lb24code
export PYTHONPATH=/tmp/lb24code GRADLINT_MIRROR=/work/.mirror
mkdir -p /work/eval/lb24run
date -u > /work/eval/lb24run/started
for part in r; do
  python benchmarks/realbugs/run.py bugs --manifest benchmarks/lockbox24/bugs_$part.toml --show > /work/eval/lb24run/bugs_$part.txt 2>&1
done
date -u > /work/eval/lb24run/bugs_done
for part in s1 s2 s3 s4 s5 s6; do
  python benchmarks/realbugs/run.py sweep --manifest benchmarks/lockbox24/sweep_$part.toml --verdicts /nonexistent.toml --set all --jobs 2 --notebooks --show > /work/eval/lb24run/sweep_$part.txt 2>&1
done
date -u > /work/eval/lb24run/done
