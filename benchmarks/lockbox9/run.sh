#!/bin/bash
# Lockbox 9, run once: bugs first, then the sweep with notebooks. Code: /tmp/lb9code (a frozen worktree).
. /work/venv/bin/activate
cd /tmp/lb9code
export PYTHONPATH=/tmp/lb9code GRADLINT_MIRROR=/work/.mirror
date -u > /work/eval/lb9run/started
for part in a b c d; do
  python benchmarks/realbugs/run.py bugs --manifest benchmarks/lockbox9/bugs_$part.toml --show > /work/eval/lb9run/bugs_$part.txt 2>&1
done
date -u > /work/eval/lb9run/bugs_done
for part in s1 s2; do
  python benchmarks/realbugs/run.py sweep --manifest benchmarks/lockbox9/sweep_$part.toml --verdicts /nonexistent.toml --set all --jobs 2 --notebooks --show > /work/eval/lb9run/sweep_$part.txt 2>&1
done
date -u > /work/eval/lb9run/done
