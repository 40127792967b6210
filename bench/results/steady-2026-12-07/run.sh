#!/bin/bash
# Cold against restore through the flow, ABBA, each arm's whole run and its steady state (bench_collect.py)
set -u
cd /work/main
out=bench/results/steady-2026-12-07
( while sleep 15; do echo "$(date +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; done ) > $out/load.log &
logger=$!
echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) start"
timeout 3000 python3 bench/bench_collect.py --order flow,flow+restore --repeat 2 --suite apps-spreadsheet --tier apps \
  --screen 1920x1080 --settle-s 1.0 --task sheet-save-csv --episodes 48 --replicas 6 \
  --out steady-2026-12-07/cold-restore-48.json 2>&1 | grep -v " INFO \| WARNING " 
echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) finished"
kill $logger
