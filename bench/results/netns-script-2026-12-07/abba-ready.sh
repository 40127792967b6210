#!/bin/bash
# Start to ready, one clone at a time, ABBA, the same images; before = a worktree of main ($BEFORE, default
# /tmp/before at 1e5d91c), after = the working tree. The installed runtime wrapper, and restore.conf where the arm
# has one, are swapped to each arm's ($INST-before/ and $INST-after/: copies of each tree's scripts/criu files as
# `make criu` installs them). Each restore arm makes its own checkpoint where the key differs.
#   ready-abba.log:        bash abba-ready.sh                     (the action script: wrapper and restore.conf)
#   ready-abba-trims.log:  BEFORE=/tmp/before2 INST=inst2 N_DESKTOP=20 N_APPS=12 bash abba-ready.sh
#                          (main at f5190f1 against the trims: the wrapper only)
set -u
prefix=/opt/osgym/criu
BEFORE=${BEFORE:-/tmp/before}; INST=${INST:-inst}; N_DESKTOP=${N_DESKTOP:-12}; N_APPS=${N_APPS:-8}
swap() {
  install -m 0755 /tmp/lo/$INST-$1/runc-criu $prefix/bin/runc-criu
  [ ! -f /tmp/lo/$INST-$1/restore.conf ] || install -m 0644 /tmp/lo/$INST-$1/restore.conf $prefix/etc/restore.conf
}
for arm in before after after before; do
  dir=/work/main; [ $arm = before ] && dir=$BEFORE
  swap $arm
  cd $dir; export PYTHONPATH=$dir
  echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) arm $arm ($dir, $(git -C $dir rev-parse --short HEAD), osgym from $(python3 -c "import osgym; print(osgym.__file__)"), action script: $(grep -c action-script $prefix/etc/restore.conf))"
  timeout 600 python3 bench/bench_pool.py cold --tier desktop --n $N_DESKTOP --reset restore 2>&1 | grep '^{'
  timeout 900 python3 bench/bench_pool.py cold --tier apps --screen 1920x1080 --n $N_APPS --reset restore --warm libreoffice 2>&1 | grep '^{'
done
swap after
echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) finished"
