#!/bin/bash
# Start to ready, one replica at a time: main's runc-criu and CRIU (before) against this change's (after), ABBA,
# with a cold desktop arm in each round for reference.
set -u
cd /work/main
arm() {
  if [ "$1" = before ]; then cp /tmp/probe/criu.orig /opt/osgym/criu/sbin/criu; cp /tmp/probe/runc-criu.orig /opt/osgym/criu/bin/runc-criu
  else cp /tmp/probe/new/criu /opt/osgym/criu/sbin/criu; cp /tmp/probe/new/runc-criu /opt/osgym/criu/bin/runc-criu; fi
  echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) arm $1"
  timeout 600 python3 bench/bench_pool.py cold --tier desktop --screen 1920x1080 --n 12 --reset restore 2>&1 | grep '^{'
  timeout 600 python3 bench/bench_pool.py cold --tier apps --screen 1920x1080 --n 8 --reset restore --warm libreoffice 2>&1 | grep '^{'
}
for a in before after after before; do
  arm $a
  if [ $a = after ]; then echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) cold desktop"; timeout 600 python3 bench/bench_pool.py cold --tier desktop --screen 1920x1080 --n 12 2>&1 | grep '^{'; fi
done
cp /tmp/probe/new/criu /opt/osgym/criu/sbin/criu; cp /tmp/probe/new/runc-criu /opt/osgym/criu/bin/runc-criu
echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) finished"
