#!/bin/bash
# Start to ready, one clone at a time: main at f5190f1 (its runc-criu installed) against the working tree with the
# restore path's trims (runc-criu starts five programs fewer; the daemon's data-root asked once per client, not on
# every restore), ABBA, the same images and restore.conf.
set -u
out=/work/main/bench/results/netns-script-2026-12-07
prefix=/opt/osgym/criu
for arm in before after after before; do
  dir=/work/main; [ $arm = before ] && dir=/tmp/before2
  install -m 0755 /tmp/lo/inst2-$arm/runc-criu $prefix/bin/runc-criu
  cd $dir; export PYTHONPATH=$dir
  echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) arm $arm ($dir, $(git -C $dir rev-parse --short HEAD), osgym from $(python3 -c "import osgym; print(osgym.__file__)"), action script: $(grep -c action-script $prefix/etc/restore.conf))"
  timeout 600 python3 bench/bench_pool.py cold --tier desktop --n 20 --reset restore 2>&1 | grep '^{'
  timeout 900 python3 bench/bench_pool.py cold --tier apps --screen 1920x1080 --n 12 --reset restore --warm libreoffice 2>&1 | grep '^{'
done
install -m 0755 /tmp/lo/inst2-after/runc-criu $prefix/bin/runc-criu
echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) finished"
