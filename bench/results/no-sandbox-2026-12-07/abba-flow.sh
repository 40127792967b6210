#!/bin/bash
# Through the flow (bench_collect.py's restore arm, as BENCHMARKS' flow tables: sheet-save-csv, 30 episodes,
# 6 replicas, standby 2), main before the change (worktree of 5e652ad, with this bench_collect.py copied in) against
# after, ABBA
set -u
OUT=/work/main/bench/results/no-sandbox-2026-12-07
( while sleep 15; do echo "$(date +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; done ) > $OUT/flow-load.log &
logger=$!
i=0
for arm in before after after before; do
  i=$((i+1)); dir=/work/main; [ $arm = before ] && dir=/tmp/before
  cd $dir; export PYTHONPATH=$dir
  echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) arm $i $arm ($dir)"
  timeout 1200 python3 bench/bench_collect.py --order flow+restore --repeat 1 --suite apps-spreadsheet --tier apps \
     --screen 1920x1080 --settle-s 1.0 --task sheet-save-csv --episodes 30 --replicas 6 \
     --out $OUT/flow-$i-$arm.json 2>&1 | grep "^{\|^checkpoint"
  sleep 20
done
echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) finished"
kill $logger
