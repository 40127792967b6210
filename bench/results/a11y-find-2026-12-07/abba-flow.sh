#!/bin/bash
# The flow's restore arm (bench_collect.py, as BENCHMARKS' flow table): the apps image before the find read
# (465e7c79e2a6: the replica ignores find_ and reads the window's tree) against after (b3aca89e134d), ABBA,
# the same host code
set -u
cd /work/main
out=bench/results/a11y-find-2026-12-07
arm() {
  echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) arm $1 ($2)"
  timeout 1200 python3 bench/bench_collect.py --order flow+restore --repeat 1 --suite apps-spreadsheet --tier apps \
     --screen 1920x1080 --settle-s 1.0 --task sheet-save-csv --episodes 30 --replicas 6 --image osgym/apps:$1 \
     --out a11y-find-2026-12-07/flow-$2-$1.json 2>&1 | tail -4
  sleep 20
}
i=1
for a in 465e7c79e2a6 b3aca89e134d b3aca89e134d 465e7c79e2a6; do arm $a $i; i=$((i+1)); done
echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) finished"
