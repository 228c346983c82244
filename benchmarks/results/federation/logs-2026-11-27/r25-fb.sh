#!/bin/bash
# issue 25 (helper fed-bench): benchmarks/federation.py on the real federation, from a snapshot of branch fed-bench
# usage: flock /tmp/yarnrl-cluster.lock bash /work/runs/r25-fb.sh TAG BENCH_ARGS...
set -x
TAG=$1; shift
date -u
# too late for 40 jobs x 5 policies (~45 min) before 07:25 UTC: leave the lock to others
if [ "$(date -u +%H%M)" -gt 0650 ]; then echo "not starting after 06:50 UTC"; exit 3; fi
RUN=/tmp/r25-fb
NAME=fed-bench
rm -rf $RUN && mkdir -p $RUN && (cd /work/wt/fed-bench && git archive HEAD | tar -x -C $RUN)
git -C /work/wt/fed-bench rev-parse HEAD > $RUN/COMMIT
cd $RUN || exit 1
OUT=/work/runs/r25-fb-$TAG; mkdir -p $OUT
cleanup() { /work/main/.venv/bin/python docker/cluster.py down --name $NAME >/dev/null 2>&1; date -u; echo "cluster down"; }
trap cleanup EXIT
mvn -B -q -o -f yarn_plugin/pom.xml package -DskipTests || exit 1
export PYTHONPATH=$RUN
/work/main/.venv/bin/python docker/images.py --only hadoop,engine,router || exit 1
date -u
/work/main/.venv/bin/python docker/cluster.py down --name $NAME >/dev/null 2>&1
/work/main/.venv/bin/python docker/cluster.py up --name $NAME --federation 2 --sc-ids SC5,SC3 --sc-memory 4096,2048 --policy maf || exit 1
date -u
uptime
# never past 07:25 UTC (the session's last commit at 07:30): partial results are written after each policy
LEFT=$(( $(date -u -d 'today 07:25' +%s) - $(date -u +%s) ))
echo "seconds left for the benchmark: $LEFT"
timeout -k 20 $LEFT /work/main/.venv/bin/python benchmarks/federation.py --name $NAME --out $OUT "$@"
echo "federation rc=$?"
uptime
date -u
