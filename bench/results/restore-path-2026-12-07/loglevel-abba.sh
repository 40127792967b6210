#!/bin/bash
set -u
cd /work/main
arm() {
  cp /tmp/probe/$1/criu /opt/osgym/criu/sbin/criu; cp /tmp/probe/$1/runc-criu /opt/osgym/criu/bin/runc-criu
  echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) arm $1"
  timeout 600 python3 bench/bench_pool.py cold --tier desktop --screen 1920x1080 --n 12 --reset restore 2>&1 | grep '^{'
  timeout 600 python3 bench/bench_pool.py cold --tier apps --screen 1920x1080 --n 8 --reset restore --warm libreoffice 2>&1 | grep '^{'
}
for a in new loglevel loglevel new; do arm $a; done
cp /tmp/probe/new/criu /opt/osgym/criu/sbin/criu; cp /tmp/probe/new/runc-criu /opt/osgym/criu/bin/runc-criu
echo "# $(date +%T) finished"
