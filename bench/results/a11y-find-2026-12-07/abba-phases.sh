#!/bin/bash
# ABBA: the apps image before the find (465e7c79e2a6) against after (b3aca89e134d), the same host code
cd /work/main
OUT=bench/results/a11y-find-2026-12-07
i=0
for img in osgym/apps:465e7c79e2a6 osgym/apps:b3aca89e134d osgym/apps:b3aca89e134d osgym/apps:465e7c79e2a6; do
  i=$((i+1)); tag=$(echo $img | cut -d: -f2)
  echo "$(date -u +%T) arm $i $img load $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT/phases.log
  python3 bench/bench_episode_phases.py --episodes 7 --image $img > $OUT/phases-$i-$tag.json 2>> $OUT/phases.log
done
echo "$(date -u +%T) end load $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT/phases.log
