#!/bin/bash
# Lockbox 11, run once: bugs first, then the sweep with notebooks. Code: /tmp/lb11code (a frozen worktree).
. /work/venv/bin/activate
cd /tmp/lb11code
export PYTHONPATH=/tmp/lb11code GRADLINT_MIRROR=/work/.mirror
mkdir -p /work/eval/lb11run
date -u > /work/eval/lb11run/started
for part in f g h; do
  python benchmarks/realbugs/run.py bugs --manifest benchmarks/lockbox11/bugs_$part.toml --show > /work/eval/lb11run/bugs_$part.txt 2>&1
done
date -u > /work/eval/lb11run/bugs_done
for part in s1 s2 s3 s4; do
  python benchmarks/realbugs/run.py sweep --manifest benchmarks/lockbox11/sweep_$part.toml --verdicts /nonexistent.toml --set all --jobs 2 --notebooks --show > /work/eval/lb11run/sweep_$part.txt 2>&1
done
date -u > /work/eval/lb11run/done
