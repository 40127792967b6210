#!/bin/bash
# The step profile at a model's pace before and after the step cut, apps tier 1920x1080, ABBA; then priced.
cd /work/main
OUT=bench/results/pace-cut-2026-12-06
NEW=osgym/apps:13b3a77185b0; OLD=osgym/apps:eed924184fed
(while sleep 15; do echo "$(date -u +%H:%M:%S) $(cut -d' ' -f1-3 /proc/loadavg)"; done) > $OUT/load.log &
LOADER=$!
n=0
for spec in "5 15 60" "0 3 30"; do
  set -- $spec; period=$1; level=$2; dur=$3
  for arm in after before before after; do
    n=$((n+1))
    if [ $arm = after ]; then img=$NEW; else img=$OLD; fi
    echo "== $(date -u +%H:%M:%S) $arm $img --levels $level --period $period --duration $dur"
    PYTHONPATH=. timeout 900 python3 bench/bench_pool.py active --tier apps --screen 1920x1080 --image $img \
      --levels $level --period $period --duration $dur --profile-out $OUT/$n-$arm 2>&1 | grep -v "^runtime"
  done
done
kill $LOADER
for d in $OUT/*-after $OUT/*-before; do bash bench/price_pace.sh $d; done > $OUT/plan.txt 2>&1
