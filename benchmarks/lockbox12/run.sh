#!/bin/bash
# Lockbox 12, run once: bugs first, then the sweep with notebooks. Code: /tmp/lb12code (a frozen worktree).
. /work/venv/bin/activate
cd /tmp/lb12code
export PYTHONPATH=/tmp/lb12code GRADLINT_MIRROR=/work/.mirror
mkdir -p /work/eval/lb12run
date -u > /work/eval/lb12run/started
for part in f g h; do
  python benchmarks/realbugs/run.py bugs --manifest benchmarks/lockbox12/bugs_$part.toml --show > /work/eval/lb12run/bugs_$part.txt 2>&1
done
date -u > /work/eval/lb12run/bugs_done
for part in s1 s2 s3; do
  python benchmarks/realbugs/run.py sweep --manifest benchmarks/lockbox12/sweep_$part.toml --verdicts /nonexistent.toml --set all --jobs 2 --notebooks --show > /work/eval/lb12run/sweep_$part.txt 2>&1
done
date -u > /work/eval/lb12run/done
