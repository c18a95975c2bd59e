#!/bin/bash
# Lockbox 13, run once: bugs first, then the sweep with notebooks. Code: /tmp/lb13code (a frozen worktree).
. /work/venv/bin/activate
cd /tmp/lb13code
export PYTHONPATH=/tmp/lb13code GRADLINT_MIRROR=/work/.mirror
mkdir -p /work/eval/lb13run
date -u > /work/eval/lb13run/started
for part in f g h i; do
  python benchmarks/realbugs/run.py bugs --manifest benchmarks/lockbox13/bugs_$part.toml --show > /work/eval/lb13run/bugs_$part.txt 2>&1
done
date -u > /work/eval/lb13run/bugs_done
for part in s1 s2 s3; do
  python benchmarks/realbugs/run.py sweep --manifest benchmarks/lockbox13/sweep_$part.toml --verdicts /nonexistent.toml --set all --jobs 2 --notebooks --show > /work/eval/lb13run/sweep_$part.txt 2>&1
done
date -u > /work/eval/lb13run/done
