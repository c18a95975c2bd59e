#!/bin/bash
# Lockbox 20, run once: bugs first, then the sweep with notebooks. Code: /tmp/lb20code (a frozen worktree).
. /work/venv/bin/activate
cd /tmp/lb20code
export PYTHONPATH=/tmp/lb20code GRADLINT_MIRROR=/work/.mirror
mkdir -p /work/eval/lb20run
date -u > /work/eval/lb20run/started
for part in p; do
  python benchmarks/realbugs/run.py bugs --manifest benchmarks/lockbox20/bugs_$part.toml --show > /work/eval/lb20run/bugs_$part.txt 2>&1
done
date -u > /work/eval/lb20run/bugs_done
for part in s1 s2 s3 s4; do
  python benchmarks/realbugs/run.py sweep --manifest benchmarks/lockbox20/sweep_$part.toml --verdicts /nonexistent.toml --set all --jobs 2 --notebooks --show > /work/eval/lb20run/sweep_$part.txt 2>&1
done
date -u > /work/eval/lb20run/done
