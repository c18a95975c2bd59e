#!/bin/bash
# Lockbox 18, run once: bugs first, then the sweep with notebooks. Code: /tmp/lb18code (a frozen worktree).
. /work/venv/bin/activate
cd /tmp/lb18code
export PYTHONPATH=/tmp/lb18code GRADLINT_MIRROR=/work/.mirror
mkdir -p /work/eval/lb18run
date -u > /work/eval/lb18run/started
for part in m n o; do
  python benchmarks/realbugs/run.py bugs --manifest benchmarks/lockbox18/bugs_$part.toml --show > /work/eval/lb18run/bugs_$part.txt 2>&1
done
date -u > /work/eval/lb18run/bugs_done
for part in s1 s2 s3 s4; do
  python benchmarks/realbugs/run.py sweep --manifest benchmarks/lockbox18/sweep_$part.toml --verdicts /nonexistent.toml --set all --jobs 2 --notebooks --show > /work/eval/lb18run/sweep_$part.txt 2>&1
done
date -u > /work/eval/lb18run/done
