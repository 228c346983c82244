#!/usr/bin/env bash
# The job-time comparison of issue 27 on the shaped container cluster: FIFO, Delay, ACL and CLQLMRS trained on the
# calibrated emulator (models/clqlmrs-docker-calibrated.safetensors), policy order rotated per run, then the paired
# differences with 95 % intervals (benchmarks/sim2real_paired.py). Run it under the shared lock:
#
#   flock /tmp/yarnrl-cluster.lock benchmarks/sim2real_cluster.sh [RUNS] [WORKLOADS] [SEED]
#
# (defaults 5 runs, wordcount, seed 4; `wordcount,sort` is the issue's full set: about 30 min per workload more for
# sort). Takes its cluster (name sim2real) down again, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
WORKLOADS=${2:-wordcount}
SEED=${3:-4}
PY=${PY:-/work/main/.venv/bin/python}
export PYTHONPATH=$PWD OMP_NUM_THREADS=1
trap '$PY docker_cluster/cluster.py down --name sim2real >/dev/null 2>&1 || true' EXIT
$PY docker_cluster/cluster.py up --name sim2real --nm-vcores 8 --worker-egress-mbit 5
$PY benchmarks/real_locality.py --cluster docker --docker-name sim2real --policies fifo,delay,acl,clqlmrs \
    --workloads "$WORKLOADS" --sizes 4mb --cached-share 0 --replication 1 --worker-egress-mbit 5 --runs "$RUNS" \
    --seed "$SEED" --clqlmrs-model models/clqlmrs-docker-calibrated.safetensors
STAMP="docker-${WORKLOADS//,/-}-4mb-rep1-egress5mbit-r${RUNS}"
$PY benchmarks/sim2real_paired.py "benchmarks/results/real_locality/real_locality-${STAMP}.json"
