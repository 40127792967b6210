#!/bin/bash
# The flow's restore arm (bench_collect.py, as BENCHMARKS' flow table): main's runc-criu and CRIU against this change's, ABBA
set -u
cd /work/main
out=bench/results/restore-path-2026-12-07
arm() {
  if [ "$1" = before ]; then cp /tmp/probe/criu.orig /opt/osgym/criu/sbin/criu; cp /tmp/probe/runc-criu.orig /opt/osgym/criu/bin/runc-criu
  else cp /tmp/probe/new/criu /opt/osgym/criu/sbin/criu; cp /tmp/probe/new/runc-criu /opt/osgym/criu/bin/runc-criu; fi
  echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) arm $1 ($2)"
  timeout 1200 python3 bench/bench_collect.py --order flow+restore --repeat 1 --suite apps-spreadsheet --tier apps --screen 1920x1080 \
     --settle-s 1.0 --task sheet-save-csv --episodes 30 --replicas 6 --out restore-path-2026-12-07/flow-$2-$1.json 2>&1 | tail -4
  sleep 20
}
i=1
for a in before after after before; do arm $a $i; i=$((i+1)); done
cp /tmp/probe/new/criu /opt/osgym/criu/sbin/criu; cp /tmp/probe/new/runc-criu /opt/osgym/criu/bin/runc-criu
echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) finished"
