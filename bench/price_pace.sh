#!/bin/bash
# Price each step profile that `bench_pool.py active --profile-out DIR` wrote, through `osgym pool plan`
# (the command's own code path), on the price table's default host:
#   bash bench/price_pace.sh bench/results/pace-2026-12-06 > bench/results/pace-2026-12-06/plan.txt
# A back-to-back run (period 0) is priced with --think-time 0, a paced one with --step-every PERIOD.
set -euo pipefail
dir=${1:?usage: bench/price_pace.sh DIR}
for f in "$dir"/*.json; do
  period=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['period_s'])" "$f")
  if [ "$period" = "0.0" ]; then opt=(--think-time 0); else opt=(--step-every "$period"); fi
  echo "\$ osgym pool plan ${opt[*]} --step-profile $f"
  COLUMNS=200 python3 -m osgym pool plan "${opt[@]}" --step-profile "$f"
  echo
done
