#!/bin/bash
# rerun inside the lock still held by r25-fb.sh (stopped): RMs with RlCapacityScheduler, AM share 0.5
set -x
cd /tmp/r25-fb || exit 1
export PYTHONPATH=/tmp/r25-fb
NAME=fed-bench
OUT=/work/runs/r25-fb-full2; mkdir -p $OUT
date -u
/work/main/.venv/bin/python docker/cluster.py down --name $NAME
/work/main/.venv/bin/python docker/cluster.py up --name $NAME --federation 2 --sc-ids SC5,SC3 --sc-memory 4096,2048 --policy maf || exit 1
date -u; uptime
LEFT=$(( $(date -u -d 'today 07:15' +%s) - $(date -u +%s) ))
echo "seconds left: $LEFT"
timeout -k 20 $LEFT /work/main/.venv/bin/python benchmarks/federation.py --name $NAME --out $OUT --policies rl-fc,sf-e,rl-lsfc,maf,random --pattern uniform --jobs 40
echo "federation rc=$?"
date -u; uptime
