#!/bin/bash
# Start to ready, one replica at a time: main before the change (a worktree of 5e652ad: every replica without a
# network gets Docker's network sandbox) against after (network_disabled, no sandbox), ABBA, the same images.
# Each restore arm makes its own checkpoint (the key differs; one is kept per tier, screen and warm state).
set -u
out=/work/main/bench/results/no-sandbox-2026-12-07
for arm in before after after before; do
  dir=/work/main; [ $arm = before ] && dir=/tmp/before
  cd $dir; export PYTHONPATH=$dir
  echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) arm $arm ($dir, $(git -C $dir rev-parse --short HEAD), osgym from $(python3 -c "import osgym; print(osgym.__file__)"))"
  timeout 600 python3 bench/bench_pool.py cold --tier desktop --n 12 --reset restore 2>&1 | grep '^{'
  timeout 600 python3 bench/bench_pool.py cold --tier desktop --n 12 2>&1 | grep '^{'
  timeout 900 python3 bench/bench_pool.py cold --tier apps --screen 1920x1080 --n 8 --reset restore --warm libreoffice 2>&1 | grep '^{'
done
echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) finished"
