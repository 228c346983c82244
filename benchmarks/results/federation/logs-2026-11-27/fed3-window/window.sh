#!/bin/bash
# fed3's lock window 09:20-10:00 UTC: the federation, the two missing policies on the committed stream (--resume),
# then (if time allows) maf with the Router policy's background load copy. Always takes the federation down.
cd /work/wt/fed3
export PYTHONPATH=$PWD; PY=/work/main/.venv/bin/python
OUT=/work/runs/fed3/table
mkdir -p $OUT
cp benchmarks/results/federation/federation-uniform-40.json $OUT/earlier-federation-uniform-40.json
down() { $PY docker/cluster.py down --name fed3 >/work/runs/fed3/down.log 2>&1; }
trap down EXIT
date -u; uptime
$PY docker/cluster.py up --name fed3 --federation 2 --sc-ids SC5,SC3 --sc-memory 4096,2048 --policy maf \
  > /work/runs/fed3/up.log 2>&1 || { echo "up failed"; tail -30 /work/runs/fed3/up.log; exit 1; }
date -u; uptime
timeout $(( $(date -d 09:58 +%s) - $(date +%s) )) \
  $PY benchmarks/federation.py --name fed3 --policies random,sf-e,maf,rl-fc,rl-lsfc --pattern uniform --jobs 40 \
  --resume benchmarks/results/federation/federation-uniform-40.json --out $OUT > /work/runs/fed3/table.log 2>&1
echo "table rc=$?"; date -u; uptime
# the load-copy run (the same stream and overhead; 20 jobs if 40 would not end before 09:58)
left=$(( $(date -d 09:58 +%s) - $(date +%s) ))
ov=$(python3 -c "import json; print(json.load(open('$OUT/earlier-federation-uniform-40.json'))['overhead_s'])")
jobs=0; [ "$left" -gt 780 ] && jobs=40; [ "$jobs" = 0 ] && [ "$left" -gt 420 ] && jobs=20
if [ "$jobs" -gt 0 ]; then
  $PY benchmarks/federation.py --name fed3 --policies maf --pattern uniform --jobs $jobs --load-max-age-ms 1000 \
    --overhead-s $ov --out $OUT > /work/runs/fed3/loadcopy.log 2>&1 &
  pid=$!
  ( sleep $((left)); kill $pid 2>/dev/null ) & killer=$!
  wait $pid; echo "loadcopy ($jobs jobs) rc=$?"; kill $killer 2>/dev/null
else
  echo "no time for the load-copy run ($left s left)"
fi
date -u
