#!/bin/bash
# Lockbox 23, run once: bugs first, then the sweep with notebooks. Code: /tmp/lb23code (a frozen worktree).
. /work/venv/bin/activate
cd /tmp/lb23code
export PYTHONPATH=/tmp/lb23code GRADLINT_MIRROR=/work/.mirror
mkdir -p /work/eval/lb23run
date -u > /work/eval/lb23run/started
for part in r; do
  python benchmarks/realbugs/run.py bugs --manifest benchmarks/lockbox23/bugs_$part.toml --show > /work/eval/lb23run/bugs_$part.txt 2>&1
done
date -u > /work/eval/lb23run/bugs_done
for part in s1 s2 s3 s4 s5 s6; do
  python benchmarks/realbugs/run.py sweep --manifest benchmarks/lockbox23/sweep_$part.toml --verdicts /nonexistent.toml --set all --jobs 2 --notebooks --show > /work/eval/lb23run/sweep_$part.txt 2>&1
done
date -u > /work/eval/lb23run/done
