#!/bin/bash
# lead: issue 25's Done-when table on merged main: maf (never finished) and random (re-run on a quieter machine),
# resumed into the committed four-policy result. Always takes the federation down.
cd /work/main
PY=/work/main/.venv/bin/python
OUT=/work/runs/lead-fed/table
mkdir -p $OUT
down() { $PY -m docker_cluster down --name yarnrl-fed > /work/runs/lead-fed/down.log 2>&1; }
trap down EXIT
date -u; uptime
make federation-up > /work/runs/lead-fed/up.log 2>&1 || { echo "up failed"; tail -30 /work/runs/lead-fed/up.log; exit 1; }
date -u; uptime
timeout ${FED_LIMIT_S:-1800} $PY benchmarks/federation.py --name yarnrl-fed --policies random,sf-e,maf,rl-fc,rl-lsfc \
  --pattern uniform --jobs 40 --resume benchmarks/results/federation/federation-uniform-40.json --rerun random \
  --rotate 1 --out $OUT > /work/runs/lead-fed/table.log 2>&1
echo "table rc=$?"; date -u; uptime
