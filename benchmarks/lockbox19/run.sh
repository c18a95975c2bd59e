#!/bin/bash
# Lockbox 19, run once: bugs first, then the sweep with notebooks. Code: /tmp/lb19code (a frozen worktree).
. /work/venv/bin/activate
cd /tmp/lb19code
export PYTHONPATH=/tmp/lb19code GRADLINT_MIRROR=/work/.mirror
mkdir -p /work/eval/lb19run
date -u > /work/eval/lb19run/started
for part in o; do
  python benchmarks/realbugs/run.py bugs --manifest benchmarks/lockbox19/bugs_$part.toml --show > /work/eval/lb19run/bugs_$part.txt 2>&1
done
date -u > /work/eval/lb19run/bugs_done
for part in s1 s2 s3 s4; do
  python benchmarks/realbugs/run.py sweep --manifest benchmarks/lockbox19/sweep_$part.toml --verdicts /nonexistent.toml --set all --jobs 2 --notebooks --show > /work/eval/lb19run/sweep_$part.txt 2>&1
done
date -u > /work/eval/lb19run/done
