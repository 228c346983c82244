#!/bin/bash
# issue 25 (helper fed-bench): a dry run of benchmarks/federation.py (6 jobs), with and without --jvm-opts
set -x
date -u
RUN=/tmp/r25-fb
NAME=fed-bench
rm -rf $RUN && mkdir -p $RUN && (cd /work/wt/fed-bench && git archive HEAD | tar -x -C $RUN)
git -C /work/wt/fed-bench rev-parse HEAD > $RUN/COMMIT
cd $RUN || exit 1
OUT=/work/runs/r25-fb-dry; rm -rf $OUT; mkdir -p $OUT
cleanup() { /work/main/.venv/bin/python docker/cluster.py down --name $NAME >/dev/null 2>&1; date -u; echo "cluster down"; }
trap cleanup EXIT
mvn -B -q -o -f yarn_plugin/pom.xml package -DskipTests || exit 1
export PYTHONPATH=$RUN
/work/main/.venv/bin/python docker/images.py --only hadoop,engine,router || exit 1
date -u
/work/main/.venv/bin/python docker/cluster.py down --name $NAME >/dev/null 2>&1
/work/main/.venv/bin/python docker/cluster.py up --name $NAME --federation 2 --sc-ids SC5,SC3 --sc-memory 4096,2048 --policy maf || exit 1
date -u; uptime; head -1 /proc/stat
/work/main/.venv/bin/python benchmarks/federation.py --name $NAME --out $OUT/a --jobs 6 --policies random,maf
echo "federation A rc=$?"
date -u; uptime; head -1 /proc/stat
/work/main/.venv/bin/python benchmarks/federation.py --name $NAME --out $OUT/b --jobs 6 --policies maf --jvm-opts ''
echo "federation B rc=$?"
date -u; uptime; head -1 /proc/stat
