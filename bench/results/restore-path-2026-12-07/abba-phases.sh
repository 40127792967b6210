#!/bin/bash
# ABBA of bench_episode_phases: before (main's runc-criu and CRIU) against after (this change's)
set -u
out=/work/main/bench/results/restore-path-2026-12-07
arm() {
  if [ "$1" = before ]; then cp /tmp/probe/criu.orig /opt/osgym/criu/sbin/criu; cp /tmp/probe/runc-criu.orig /opt/osgym/criu/bin/runc-criu
  else cp /tmp/probe/new/criu /opt/osgym/criu/sbin/criu; cp /tmp/probe/new/runc-criu /opt/osgym/criu/bin/runc-criu; fi
  echo "$(date +%T) load $(cut -d' ' -f1 /proc/loadavg) arm $1 -> phases-$2-$1.json"
  (cd /work/main && timeout 1200 python3 bench/bench_episode_phases.py --episodes 7 --reset restore > $out/phases-$2-$1.json)
  echo "$(date +%T) load $(cut -d' ' -f1 /proc/loadavg) done $1 rc=$?"
}
i=1
for a in before after after before; do arm $a $i; i=$((i+1)); done
cp /tmp/probe/new/criu /opt/osgym/criu/sbin/criu; cp /tmp/probe/new/runc-criu /opt/osgym/criu/bin/runc-criu
echo finished
