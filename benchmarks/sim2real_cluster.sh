#!/usr/bin/env bash
# The job-time comparison of issue 27 on the shaped container cluster: FIFO, Delay, ACL and CLQLMRS trained on the
# calibrated emulator (models/clqlmrs-docker-calibrated.safetensors), policy order rotated per run, then the paired
# differences with 95 % intervals (benchmarks/sim2real_paired.py). Run it under the shared lock:
#
#   flock /tmp/yarnrl-cluster.lock benchmarks/sim2real_cluster.sh [RUNS] [WORKLOADS] [SEED]
#
# (defaults 5 runs, wordcount, seed 4; `wordcount,sort` is the issue's full set: about 30 min per workload more for
# sort). Takes its cluster (name sim2real) down again, also on failure.
#
# Cache locality that costs something (issue 27, item 4): the workers' disk reads are throttled to DISK_MBPS MB/s
# (blkio; the DataNodes drop the page cache behind their reads) and CACHED_SHARE of the input files sit in the
# DataNodes' centralized cache (DN_CACHE_MB each), so a map that reads a cached replica on its node skips the disk.
# DISK_MBPS=0 gives the earlier setting (unthrottled disks; then CACHED_SHARE should be 0: a cached read costs what a
# disk read does).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
WORKLOADS=${2:-wordcount}
SEED=${3:-4}
DISK_MBPS=${DISK_MBPS:-2}
CACHED_SHARE=${CACHED_SHARE:-0.5}
DN_CACHE_MB=${DN_CACHE_MB:-64}
PY=${PY:-/work/main/.venv/bin/python}
export PYTHONPATH=$PWD OMP_NUM_THREADS=1
trap '$PY docker_cluster/cluster.py down --name sim2real >/dev/null 2>&1 || true' EXIT
DISK=()
STAMP="docker-${WORKLOADS//,/-}-4mb-rep1-egress5mbit"
if [ "$DISK_MBPS" != 0 ]; then
  DISK=(--worker-disk-read-mbps "$DISK_MBPS")
  STAMP="$STAMP-disk${DISK_MBPS}mbps"
  if [ "$CACHED_SHARE" != 0 ]; then STAMP="$STAMP-cache${CACHED_SHARE}"; fi
fi
STAMP="$STAMP-r${RUNS}"
$PY docker_cluster/cluster.py up --name sim2real --nm-vcores 8 --worker-egress-mbit 5 --dn-cache-mb "$DN_CACHE_MB" \
    "${DISK[@]}"
$PY benchmarks/real_locality.py --cluster docker --docker-name sim2real --policies fifo,delay,acl,clqlmrs \
    --workloads "$WORKLOADS" --sizes 4mb --cached-share "$CACHED_SHARE" --replication 1 --worker-egress-mbit 5 \
    --dn-cache-mb "$DN_CACHE_MB" "${DISK[@]}" --runs "$RUNS" --seed "$SEED" \
    --clqlmrs-model models/clqlmrs-docker-calibrated.safetensors
$PY benchmarks/sim2real_paired.py "benchmarks/results/real_locality/real_locality-${STAMP}.json"
