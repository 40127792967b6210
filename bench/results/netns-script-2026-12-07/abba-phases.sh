#!/bin/bash
# The whole machine's CPU around each lease and episode (bench_episode_phases.py: sheet-save-csv oracle episodes,
# one restored clone at a time), main before the change (worktree of 1e5d91c, its runc-criu and restore.conf
# installed) against after, ABBA
set -u
OUT=/work/main/bench/results/netns-script-2026-12-07
prefix=/opt/osgym/criu
i=0
for arm in before after after before; do
  i=$((i+1)); dir=/work/main; [ $arm = before ] && dir=/tmp/before
  install -m 0755 /tmp/lo/inst-$arm/runc-criu $prefix/bin/runc-criu
  install -m 0644 /tmp/lo/inst-$arm/restore.conf $prefix/etc/restore.conf
  cd $dir; export PYTHONPATH=$dir
  echo "$(date -u +%T) arm $i $arm ($dir) load $(cut -d' ' -f1-3 /proc/loadavg) action script: $(grep -c action-script $prefix/etc/restore.conf)" >> $OUT/phases.log
  timeout 900 python3 bench/bench_episode_phases.py --episodes 7 > $OUT/phases-$i-$arm.json 2>> $OUT/phases.log
done
install -m 0755 /tmp/lo/inst-after/runc-criu $prefix/bin/runc-criu
install -m 0644 /tmp/lo/inst-after/restore.conf $prefix/etc/restore.conf
echo "$(date -u +%T) end load $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT/phases.log
