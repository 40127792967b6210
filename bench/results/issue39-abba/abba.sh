#!/bin/bash
# ABBA: before (7a88530) and after (main HEAD), step latency then collect, each in its own checkout and image
set -u
out=/tmp/abba; mkdir -p $out
for arm in ${ORDER:-before after after before}; do
  dir=/tmp/before; [ $arm = after ] && dir=/work/main
  n=$(ls $out | grep -c "^step-$arm") 
  echo "== $arm step $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  (cd $dir && PYTHONPATH=$dir python3 bench/bench_step_latency.py --steps 200 --json $out/step-$arm-$n.json) > $out/step-$arm-$n.log 2>&1
  tail -3 $out/step-$arm-$n.log
  echo "== $arm collect $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  (cd $dir && PYTHONPATH=$dir python3 bench/bench_collect.py --order flow --task files-move --replicas 6 --episodes 60 --out abba-$arm-$n.json) > $out/collect-$arm-$n.log 2>&1
  tail -6 $out/collect-$arm-$n.log
done
echo "== done $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
