#!/bin/bash
# Start to ready of restored apps replicas (LibreOffice resident), one at a time: the apps image before the find read
# against after, ABBA; each arm makes its own checkpoint (one is kept per tier, screen and warm state)
set -u
cd /work/main
for img in 465e7c79e2a6 b3aca89e134d b3aca89e134d 465e7c79e2a6; do
  echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) arm $img"
  timeout 600 python3 bench/bench_pool.py cold --tier apps --screen 1920x1080 --n 8 --reset restore --warm libreoffice \
    --image osgym/apps:$img 2>&1 | grep '^{'
done
echo "# $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) finished"
