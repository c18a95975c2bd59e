#!/bin/bash
# Lockbox 17, run once: bugs first, then the sweep with notebooks. Code: /tmp/lb17code (a frozen worktree).
. /work/venv/bin/activate
cd /tmp/lb17code
export PYTHONPATH=/tmp/lb17code GRADLINT_MIRROR=/work/.mirror
mkdir -p /work/eval/lb17run
date -u > /work/eval/lb17run/started
for part in j k l; do
  python benchmarks/realbugs/run.py bugs --manifest benchmarks/lockbox17/bugs_$part.toml --show > /work/eval/lb17run/bugs_$part.txt 2>&1
done
date -u > /work/eval/lb17run/bugs_done
for part in s1 s2 s3 s4; do
  python benchmarks/realbugs/run.py sweep --manifest benchmarks/lockbox17/sweep_$part.toml --verdicts /nonexistent.toml --set all --jobs 2 --notebooks --show > /work/eval/lb17run/sweep_$part.txt 2>&1
done
date -u > /work/eval/lb17run/done
