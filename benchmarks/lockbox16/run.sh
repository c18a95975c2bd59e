#!/bin/bash
# Lockbox 16, run once: bugs first, then the sweep with notebooks. Code: /tmp/lb16code (a frozen worktree).
. /work/venv/bin/activate
cd /tmp/lb16code
export PYTHONPATH=/tmp/lb16code GRADLINT_MIRROR=/work/.mirror
mkdir -p /work/eval/lb16run
date -u > /work/eval/lb16run/started
for part in j k l; do
  python benchmarks/realbugs/run.py bugs --manifest benchmarks/lockbox16/bugs_$part.toml --show > /work/eval/lb16run/bugs_$part.txt 2>&1
done
date -u > /work/eval/lb16run/bugs_done
for part in s1 s2 s3 s4; do
  python benchmarks/realbugs/run.py sweep --manifest benchmarks/lockbox16/sweep_$part.toml --verdicts /nonexistent.toml --set all --jobs 2 --notebooks --show > /work/eval/lb16run/sweep_$part.txt 2>&1
done
date -u > /work/eval/lb16run/done
