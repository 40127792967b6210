#!/bin/bash
# The whole machine's CPU around each lease and episode (bench_episode_phases.py: sheet-save-csv oracle episodes,
# one restored clone at a time), main before the change (worktree of 5e652ad) against after, ABBA
set -u
OUT=/work/main/bench/results/no-sandbox-2026-12-07
i=0
for arm in before after after before; do
  i=$((i+1)); dir=/work/main; [ $arm = before ] && dir=/tmp/before
  cd $dir; export PYTHONPATH=$dir
  echo "$(date -u +%T) arm $i $arm ($dir) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT/phases.log
  timeout 900 python3 bench/bench_episode_phases.py --episodes 7 > $OUT/phases-$i-$arm.json 2>> $OUT/phases.log
done
echo "$(date -u +%T) end load $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT/phases.log
