#!/bin/bash
# ABBA: the step before and after the cut, both tiers, both formats
cd /work/main
OUT=bench/results/step-cut-2026-12-06
declare -A NEW=([apps]=osgym/apps:13b3a77185b0 [desktop]=osgym/desktop:e9d3aee945c2)
declare -A OLD=([apps]=osgym/apps:eed924184fed [desktop]=osgym/desktop:c793ae0a8534)
for tier in apps desktop; do for fmt in png jpeg; do
  n=0
  for arm in after before before after; do
    n=$((n+1))
    if [ $arm = after ]; then img=${NEW[$tier]}; else img=${OLD[$tier]}; fi
    echo "== $(date -u +%H:%M:%S) $tier $fmt $arm $img load $(cut -d' ' -f1-3 /proc/loadavg)"
    PYTHONPATH=. timeout 900 python3 bench/bench_step_latency.py --tier $tier --screen 1920x1080 --steps 200 --image $img --format $fmt --json $OUT/$tier-$fmt-$n-$arm.json > /dev/null 2>$OUT/err.log || tail -3 $OUT/err.log
    python3 -c "import json;d=json.load(open('$OUT/$tier-$fmt-$n-$arm.json'));print(d['step_ms'],d['screenshot_in_replica_ms']['p50'],d['frame_kib_mean'],d['idle_memory'],d['loadavg_1m_after'])"
  done
done; done
