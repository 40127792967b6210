#!/bin/bash
# Start to ready, one replica at a time: main before the change (a worktree of 1e5d91c: a checkpoint's template,
# and so its clones, get Docker's network sandbox, whose prestart hook brings a clone's loopback up) against
# after (no sandbox; CRIU's action script restore-netns writes the clone's net sysctls and brings lo up), ABBA,
# the same images. The installed runtime wrapper and restore.conf are swapped to each arm's (inst-before/ and
# inst-after/: copies of each tree's scripts/criu/runc-criu and restore.conf as `make criu` installs them).
# Each restore arm makes its own checkpoint (the key differs; one is kept per tier, screen and warm state).
set -u
out=/work/main/bench/results/netns-script-2026-12-07
prefix=/opt/osgym/criu
for arm in before after after before; do
  dir=/work/main; [ $arm = before ] && dir=/tmp/before
  install -m 0755 /tmp/lo/inst-$arm/runc-criu $prefix/bin/runc-criu
  install -m 0644 /tmp/lo/inst-$arm/restore.conf $prefix/etc/restore.conf
  cd $dir; export PYTHONPATH=$dir
  echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) arm $arm ($dir, $(git -C $dir rev-parse --short HEAD), osgym from $(python3 -c "import osgym; print(osgym.__file__)"), action script: $(grep -c action-script $prefix/etc/restore.conf))"
  timeout 600 python3 bench/bench_pool.py cold --tier desktop --n 12 --reset restore 2>&1 | grep '^{'
  timeout 900 python3 bench/bench_pool.py cold --tier apps --screen 1920x1080 --n 8 --reset restore --warm libreoffice 2>&1 | grep '^{'
done
install -m 0755 /tmp/lo/inst-after/runc-criu $prefix/bin/runc-criu
install -m 0644 /tmp/lo/inst-after/restore.conf $prefix/etc/restore.conf
echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) finished"
