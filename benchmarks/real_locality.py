"""Learned and locality-aware placement on a real YARN: FIFO, Delay, ACL and CLQLMRS served to RlScheduler.

One JVM hosts the mini cluster (MiniDFSCluster: 4 DataNodes h1..h4 in 2 racks, replication 2, centralized cache;
MiniYARNCluster + MapReduce with RlScheduler as the ResourceManager's scheduler); Python drives it over py4j
(yarn_plugin's test class org.yarnrl.yarn.LocalityLab) and runs a real `policy-engine serve --webhdfs` for one
policy after another on the address the scheduler was given. Every policy runs the same HiBench-shaped jobs on the
same data: input generated once per workload and size (RandomTextWriter for WordCount and Sort, TeraGen for
TeraSort; `--maps` files of one block each), half of its files (those MapReduce schedules first) cached with an HDFS
cache directive (replication 1, as in CLQLMRS), then `--jobs` concurrent jobs `--interarrival-s` apart per run, `--runs` runs (policy order rotated
from run to run).

Per policy: local-task rate (DATA_LOCAL_MAPS / launched maps, MapReduce's counters), cache locality (maps that read
a cached replica on their own node, counted by each map task itself from its split's block locations:
LocalityProbe), data-local / rack-local / off-switch map counts (MapReduce's counters), mean job time and makespan,
each as mean and std over runs; the engine's decision latency (p50/p99 from its Prometheus histogram); the engine's
own read-level labels against the maps' ground truth; and the emulator's prediction for the same cluster shape
(4 nodes of 4 GB in 2 racks, replication 2, the same maps, cached share, job count and heartbeat) beside each
measured number. Writes a PNG bar chart and a JSON file; the last stdout line is one JSON object.

Needs Java 17 and Maven (the plugin and its test classes are built on first use) and `make install`.

    .venv/bin/python benchmarks/real_locality.py --cluster mini --policies fifo,delay,acl,clqlmrs \\
        --workloads wordcount,sort,terasort --sizes tiny --runs 3
    .venv/bin/python benchmarks/real_locality.py ... --clqlmrs-model none     # CLQLMRS from an empty table

--cluster docker runs the same on the container cluster (docker_cluster/cluster.py; `make images` first): attached to when
a cluster named --docker-name runs, else started and removed at the end. Cache locality there is the engine's own
read-level labels (no per-map probe in the containers); the emulator's prediction uses its 500 ms heartbeat.

    .venv/bin/python benchmarks/real_locality.py --cluster docker --policies fifo,delay,clqlmrs --runs 2 --seed 1

On one host every container reads every other one's blocks at memory speed, so placement cannot change job time
there. --worker-egress-mbit makes the container cluster network-bound, like a real one behind oversubscribed links:
each worker's eth0 egress goes through a token bucket (tc tbf), so a remote block read (and a shuffle fetch, a
replication pipeline) costs bandwidth while a read of the worker's own DataNode (over lo) does not. --replication 1
gives the 4 workers the share of the blocks a node of a 12+ node cluster with 3 replicas holds (a quarter or less;
replication 2 on 4 nodes: half), and an `<N>mb` size gives blocks large enough for a remote read to take seconds
(a DataNode's cache holds 8 MB unless the cluster was started with --dn-cache-mb: larger files are not cached). The emulator's prediction takes the same replication
and caps its remote reads at the same rate; --clqlmrs-model models/clqlmrs-docker-rep1.safetensors is the table
trained on that shape.

    python -m docker_cluster up --worker-egress-mbit 5     # default NodeManagers (4,096 MB / 4 vcores): since
                                                           # issue 23 the engine counts what YARN's calculator counts
    .venv/bin/python benchmarks/real_locality.py --cluster docker --policies fifo,delay,acl,clqlmrs \\
        --workloads wordcount --sizes 4mb --cached-share 0 --replication 1 --worker-egress-mbit 5 --runs 3 \\
        --seed 3 --clqlmrs-model models/clqlmrs-docker-rep1.safetensors

A cached replica costs what a disk replica does on one host (the page cache serves both) unless the workers' disks
are throttled: --worker-disk-read-mbps (docker_cluster/cluster.py up --worker-disk-read-mbps: blkio throttle, the
DataNodes drop the page cache behind reads, a cached replica stays in memory) with --dn-cache-mb large enough for
the cached share; every policy run then starts with the block files out of the page cache, and the JSON records the
rate, the drop-behind and the cache budget (benchmarks/sim2real_cluster.sh runs it so).

    python -m docker_cluster up --worker-egress-mbit 5 --worker-disk-read-mbps 2 --dn-cache-mb 64
    .venv/bin/python benchmarks/real_locality.py --cluster docker --policies fifo,delay,clqlmrs --workloads wordcount \\
        --sizes 4mb --cached-share 0.5 --replication 1 --worker-egress-mbit 5 --worker-disk-read-mbps 2 --dn-cache-mb 64

--mode shadow starts the container cluster with `yarnrl.engine.mode=shadow` on the ResourceManager: RlScheduler asks
the engine on every heartbeat but never applies its answer, so YARN (FIFO) places every container, and each policy
run reports, on the same heartbeats, the locality mix the engine would have chosen beside YARN's (the engine's
yarnrl_shadow_* metrics), how often YARN's container went to an ask the engine also chose for that node, and the
plugin's Shadow* counters (JMX).

    .venv/bin/python benchmarks/real_locality.py --cluster docker --docker-name shadow --mode shadow \\
        --policies clqlmrs --workloads wordcount --sizes tiny --runs 2
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from emulator.jobhistory import (JSON_FORMAT_OPTION, JSON_HEADER, JobHistoryError, mean_phases, parse_jhist,
                                 phases)
from policy_engine.metrics_scrape import Metrics, histogram_quantile

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "yarn_plugin"
TARGET = PLUGIN / "target"
SHADED_JAR = TARGET / "yarnrl-yarn-plugin-0.1.0.jar"
CLASSPATH_FILE = TARGET / "lab-classpath.txt"
TEST_CLASSES = TARGET / "test-classes"
RESULTS = ROOT / "benchmarks" / "results" / "real_locality"
DEFAULT_CLQLMRS_MODEL = ROOT / "models" / "clqlmrs-mini.safetensors"
DEFAULT_CALIBRATION = ROOT / "models" / "calibration-docker-egress5.json"  # `emulator calibrate` on the shaped runs

# HiBench's MapReduce micro profiles (bytes; TeraSort: rows of 100 bytes)
HIBENCH = {"wordcount": {"tiny": 32_000, "small": 320_000_000},
           "sort": {"tiny": 32_000, "small": 3_200_000},
           "terasort": {"tiny": 32_000, "small": 3_200_000}}
POLICIES = ("fifo", "delay", "acl", "clqlmrs")
STATES = ("CL", "DL", "CRL", "DRL", "NO")
MB = 1 << 20
# a DataNode's cache in the containers unless the cluster says otherwise (docker_cluster up --dn-cache-mb; results
# written before issue 27 record none: their clusters had this)
DOCKER_CACHE_BYTES = 8 * MB
EMULATOR_BLOCK_MB = 32  # the emulator's smallest HDFS block
HEARTBEAT_MS = 250  # MiniHadoop's NodeManager heartbeat
DOCKER_HEARTBEAT_MS = 500  # docker/hadoop/conf/yarn-site.xml.in: nodemanagers.heartbeat-interval-ms


def log(*args) -> None:
    print(*args, flush=True)


# ---------------------------------------------------------------------------------------------- build, JVM


def _stale(test_class: str) -> bool:
    needed = (SHADED_JAR, CLASSPATH_FILE, TEST_CLASSES / (test_class.replace(".", "/") + ".class"))
    if not all(p.exists() for p in needed):
        return True
    built = SHADED_JAR.stat().st_mtime  # `package` shades it anew on every build (the class path file may keep its time)
    sources = [*PLUGIN.joinpath("src").rglob("*.java"), PLUGIN / "pom.xml", ROOT / "proto" / "yarnrl" / "v1" /
               "scheduler.proto"]
    return any(p.stat().st_mtime > built for p in sources)


def build_plugin(test_class: str = "org.yarnrl.yarn.LocalityLab") -> None:
    """The shaded plugin jar, the test classes (test_class among them) and the class path file, when missing or
    stale."""
    if not _stale(test_class):
        return
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SystemExit("real_locality: Maven (mvn) is not on PATH; it builds the plugin and the mini cluster")
    cmd = [mvn, "-B", "-q", "-f", str(PLUGIN / "pom.xml"), "package", "-DskipTests"]
    log("building the plugin:", " ".join(cmd))
    # Maven's output goes to stderr: stdout carries the benchmark's own lines, the last one JSON (fd 2; Maven 3.9 writes
    # colour-reset codes to stdout even with -B -q, which broke that last line on a fresh checkout)
    if subprocess.run(cmd, stdout=2).returncode != 0:
        raise SystemExit("real_locality: the plugin build failed")


def java17_opens() -> str:
    m = re.search(r"<java17.opens>(.*?)</java17.opens>", (PLUGIN / "pom.xml").read_text(), re.S)
    return m.group(1).strip() if m else ""


def free_port() -> int:
    """A free port below Linux's ephemeral range (32768-60999): the engine starts after the mini cluster, whose
    many servers bind ephemeral ports, so a port picked there before the boot may be taken by then."""
    import random

    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(20000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise SystemExit("real_locality: no free TCP port in 20000-32000")


class MiniCluster:
    """The mini cluster in a JVM started by py4j; `lab` is its org.yarnrl.yarn.LocalityLab."""

    def __init__(self, workdir: Path, engine_address: str, deadline_ms: int, heap: str = "2g"):
        from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

        workdir.mkdir(parents=True, exist_ok=True)
        classpath = os.pathsep.join([str(TEST_CLASSES), str(SHADED_JAR), CLASSPATH_FILE.read_text().strip()])
        opens = java17_opens()
        self.log_path = workdir / "jvm.log"
        # WARN and above only: the mini cluster logs every RPC at INFO, which costs CPU on a 2-core machine
        log4j = workdir / "log4j.properties"
        log4j.write_text("log4j.rootLogger=WARN,stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
                         "log4j.appender.stderr.Target=System.err\nlog4j.appender.stderr.layout="
                         "org.apache.log4j.PatternLayout\nlog4j.appender.stderr.layout.ConversionPattern="
                         "%d{ISO8601} %p %c{2}: %m%n\nlog4j.logger.org.yarnrl=INFO\n")
        self._log = open(self.log_path, "a")
        self.port = launch_gateway(
            classpath=classpath, die_on_exit=True, redirect_stdout=self._log, redirect_stderr=self._log,
            cwd=str(workdir),  # MiniMRYarnCluster writes under ./target/test/data
            javaopts=[f"-Xmx{heap}", "-Djava.net.preferIPv4Stack=true", f"-Dlog4j.configuration=file:{log4j}",
                      f"-Djdk.net.hosts.file={workdir / 'hosts'}", f"-Dyarnrl.mr.opens={opens}", *opens.split()])
        self.gateway = JavaGateway(gateway_parameters=GatewayParameters(port=self.port, auto_convert=True))
        self.lab = self.gateway.jvm.org.yarnrl.yarn.LocalityLab(str(workdir / "cluster"), engine_address,
                                                                deadline_ms)

    def close(self) -> None:
        try:
            self.lab.close()
        except Exception:  # the JVM may already be gone
            pass
        try:
            self.gateway.shutdown()
        except Exception:
            pass
        self._log.close()


class DockerLab:
    """The container cluster of docker_cluster/cluster.py behind the methods of LocalityLab that this benchmark calls, so
    one experiment loop drives both clusters. Jobs are Hadoop's example jobs run with `hadoop jar` in the client
    container (HiBench's commands, benchmarks/hibench.py, plus one block per input file); map counts come from the
    MapReduce counters the client prints, job times from the ResourceManager's REST API. There is no per-map
    ground-truth probe here (LocalityProbe is a test class of the mini cluster): cache locality is the engine's
    read-level labels (policy_engine.labels), which the mini cluster checks against that probe."""

    POOL = "yarnrl-bench"

    def __init__(self, cluster, job_timeout_s: float = 1800.0):
        import threading

        self.cluster = cluster
        self.job_timeout_s = job_timeout_s
        self._threads: dict[int, tuple[threading.Thread, dict]] = {}
        self._next = 0
        self._reduces = 1

    # --------------------------------------------------------------- what LocalityLab answers
    def nodeRacks(self) -> str:
        spec = self.cluster.spec
        return json.dumps({h: spec.rack_of(i) for i, h in enumerate(spec.worker_hosts())})

    def webHdfsUrl(self) -> str:
        return self.cluster.nn_url

    def sh(self, cmd: list[str] | str, timeout: float = 600.0, check: bool = True) -> tuple[int, str]:
        return self.cluster.exec(cmd, timeout=timeout, check=check)

    def delete(self, path: str) -> None:
        self.sh(["hdfs", "dfs", "-rm", "-r", "-f", "-skipTrash", path], timeout=300)

    def _generate(self, cmd: list[str]) -> str:
        t0 = time.time()
        rc, out = self.sh(cmd, timeout=self.job_timeout_s, check=False)
        return json.dumps({"succeeded": rc == 0, "seconds": time.time() - t0,
                           "output": "" if rc == 0 else "\n".join(out.splitlines()[-15:])})

    def randomText(self, path: str, amount: int, maps: int, block: int, replication: int = 2) -> str:
        from docker_cluster.cluster import EXAMPLES_JAR

        return self._generate(["hadoop", "jar", EXAMPLES_JAR, "randomtextwriter", "-D", f"dfs.blocksize={block}",
                               "-D", f"dfs.replication={replication}",
                               "-D", f"mapreduce.randomtextwriter.totalbytes={amount}", "-D",
                               f"mapreduce.randomtextwriter.bytespermap={max(1, amount // maps)}", path])

    def teraGen(self, path: str, rows: int, maps: int, block: int, replication: int = 2) -> str:
        from docker_cluster.cluster import EXAMPLES_JAR

        return self._generate(["hadoop", "jar", EXAMPLES_JAR, "teragen", "-D", f"dfs.blocksize={block}", "-D",
                               f"dfs.replication={replication}", "-D",
                               f"mapreduce.job.maps={maps}", str(rows), path])

    def rewriteFromClient(self, files: list[str], replication: int) -> None:
        """Write `files` again from the client container with `replication` replicas per block. The client hosts no
        DataNode, so the NameNode picks each block's first replica among all workers; a writer on a DataNode (the
        generator's map tasks) always gets its own node first, and lowering the replication afterwards kept the
        blocks of a whole input on one worker. One `hdfs dfs -cp` per call (one JVM start for all files)."""
        tmp = f"{files[0].rsplit('/', 1)[0]}/.rewrite"
        script = (f"hdfs dfs -rm -r -f -skipTrash {tmp} && hdfs dfs -mkdir -p {tmp} && "
                  f"hdfs dfs -D dfs.replication={int(replication)} -cp {' '.join(files)} {tmp}/ && "
                  f"hdfs dfs -rm -skipTrash {' '.join(files)} && "
                  + " && ".join(f"hdfs dfs -mv {tmp}/{f.rsplit('/', 1)[1]} {f}" for f in files)
                  + f" && hdfs dfs -rm -r -f -skipTrash {tmp}")
        self.sh(["bash", "-c", script], timeout=self.job_timeout_s)

    def dataFiles(self, path: str) -> list[str]:
        """The input's data files in MapReduce's task order: longest first, ties in name order."""
        listing = _http_get_json(f"{self.cluster.nn_url}/webhdfs/v1{path}?op=LISTSTATUS&user.name=root")
        files = [(f["pathSuffix"], int(f["length"])) for f in listing["FileStatuses"]["FileStatus"]
                 if f["type"] == "FILE" and not f["pathSuffix"].startswith(("_", "."))]
        files.sort(key=lambda x: x[0])
        return [f"{path}/{name}" for name, _ in sorted(files, key=lambda x: -x[1])]

    def cache(self, files: list[str], timeout_s: float = 300.0) -> None:
        """A cache directive (replication 1) per file; returns once WebHDFS shows every file cached."""
        self.sh(["hdfs", "cacheadmin", "-addPool", self.POOL], timeout=120, check=False)  # may exist already
        for f in files:
            self.sh(["hdfs", "cacheadmin", "-addDirective", "-path", f, "-pool", self.POOL, "-replication", "1"],
                    timeout=120)
        until = time.monotonic() + timeout_s
        while True:
            missing = [f for f in files if not all(b.get("cachedHosts") for b in self.cluster.block_locations(f))]
            if not missing:
                return
            if time.monotonic() > until:
                raise RuntimeError(f"not cached after {timeout_s:.0f} s: {missing} (DataNode cache full?)")
            time.sleep(3)

    def uncacheAll(self) -> None:
        self.sh(["hdfs", "cacheadmin", "-removePool", self.POOL], timeout=120, check=False)

    def setReduces(self, n: int) -> None:
        self._reduces = n

    def submit(self, workload: str, inp: str, out: str, tag: str) -> int:
        import threading

        from docker_cluster.cluster import EXAMPLES_JAR

        # the job's history file in JSON (Hadoop 3 writes binary by default): its phases for `emulator calibrate`
        tags = ["-D", f"mapreduce.job.tags={tag}", "-D", JSON_FORMAT_OPTION]
        if workload == "wordcount":
            cmd = ["hadoop", "jar", EXAMPLES_JAR, "wordcount", *tags, "-D", f"mapreduce.job.reduces={self._reduces}",
                   "-D", "mapreduce.job.inputformat.class=org.apache.hadoop.mapreduce.lib.input.SequenceFileInputFormat",
                   inp, out]
        elif workload == "sort":
            cmd = ["hadoop", "jar", EXAMPLES_JAR, "sort", *tags, "-outKey", "org.apache.hadoop.io.Text",
                   "-outValue", "org.apache.hadoop.io.Text", "-r", str(self._reduces), inp, out]
        else:
            cmd = ["hadoop", "jar", EXAMPLES_JAR, "terasort", *tags, "-D", f"mapreduce.job.reduces={self._reduces}",
                   inp, out]
        result: dict = {"submit_ms": int(time.time() * 1000)}

        def run():
            rc, output = self.sh(cmd, timeout=self.job_timeout_s, check=False)
            result.update(rc=rc, output=output, finish_ms=int(time.time() * 1000))

        t = threading.Thread(target=run, daemon=True)
        t.start()
        self._next += 1
        self._threads[self._next] = (t, result)
        return self._next

    def awaitJob(self, handle: int) -> str:
        t, r = self._threads.pop(handle)
        t.join()
        return json.dumps(docker_job_result(r.get("rc", 1), r.get("output", ""), r["submit_ms"],
                                            r.get("finish_ms", r["submit_ms"]), self._app_times))

    HISTORY_DIR = "/tmp/hadoop-yarn/staging/history/done_intermediate"  # the AM's default, any user below it

    def add_phases(self, results: list[dict], timeout_s: float = 60.0) -> None:
        """Each finished job's phases (emulator.jobhistory) from its history file, read in one `hdfs dfs -cat` after
        the run's jobs ended (the AM moves the file there as it shuts down, so a file may lag the job by seconds).
        Between the runs of two policies, not inside one: the client JVM would take CPU from the jobs measured.
        A job whose history cannot be read gets `phases_error` instead: the run stays valid without it."""
        by_job = {r["application_id"].replace("application_", "job_"): r for r in results
                  if r.get("succeeded") and r.get("application_id")}
        until = time.monotonic() + timeout_s
        histories: dict = {}
        errors: dict[str, str] = {}
        while by_job.keys() - histories.keys():
            missing = sorted(by_job.keys() - histories.keys())
            # one JVM for all files; a file not there yet only prints an error for its own path
            paths = " ".join(shlex.quote(f"{self.HISTORY_DIR}/*/{j}-*.jhist") for j in missing)
            _, out = self.sh(f"hdfs dfs -cat {paths} 2>/dev/null", timeout=120, check=False)  # no log lines in it
            for text in re.split(rf"(?m)^(?={JSON_HEADER}\s*$)", out):
                if not text.startswith(JSON_HEADER):
                    continue
                try:
                    job = parse_jhist(text)
                except JobHistoryError as e:
                    errors.setdefault("?", str(e))
                    continue
                if job.job_id in by_job:
                    histories[job.job_id] = job
            if time.monotonic() > until or not by_job.keys() - histories.keys():
                break
            time.sleep(3)
        for job, r in by_job.items():
            try:
                if job not in histories:
                    raise JobHistoryError(errors.get("?") or
                                          f"no history file under {self.HISTORY_DIR} after {timeout_s:.0f} s")
                r["phases"] = phases(histories[job], r.get("submit_ms"), r.get("finish_ms"))
            except JobHistoryError as e:
                r["phases_error"] = f"{job}: {e}"

    def _app_times(self, app_id: str) -> dict | None:
        try:
            return _http_get_json(f"{self.cluster.rm_url}/ws/v1/cluster/apps/{app_id}")["app"]
        except Exception:
            return None

    def pluginMetrics(self) -> str:
        j = self.cluster.rm_jmx()
        # LocalityLab's names (snake case) for the RlScheduler bean's counters
        return json.dumps({re.sub(r"(?<!^)(?=[A-Z])", "_", k).lower(): v for k, v in j.items()
                           if isinstance(v, (int, float)) and not isinstance(v, bool)})


def _http_get_json(url: str, timeout: float = 30.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 (the cluster's loopback ports)
        return json.loads(r.read().decode())


def mr_counter(output: str, name: str) -> int:
    """One MapReduce counter from `hadoop jar`'s printed counters (0 when the job did not print it)."""
    m = re.search(rf"^\s*{re.escape(name)}=(\d+)\s*$", output, re.M)
    return int(m.group(1)) if m else 0


def docker_job_result(rc: int, output: str, submit_ms: int, finish_ms: int, app_times=None) -> dict:
    """What LocalityLab.awaitJob answers, from a `hadoop jar` run in the client container: success, the map
    counters, and the job's own start/finish (the ResourceManager's, when `app_times(app id)` answers; else the
    client's wall clock, which includes the client JVM's start)."""
    m = re.search(r"Running job: job_(\d+_\d+)", output)
    app = f"application_{m.group(1)}" if m else ""
    res = {"succeeded": rc == 0 and "completed successfully" in output, "application_id": app,
           "TOTAL_LAUNCHED_MAPS": mr_counter(output, "Launched map tasks"),
           "DATA_LOCAL_MAPS": mr_counter(output, "Data-local map tasks"),
           "RACK_LOCAL_MAPS": mr_counter(output, "Rack-local map tasks"),
           "OTHER_LOCAL_MAPS": mr_counter(output, "Other local map tasks"),
           "submit_ms": submit_ms, "finish_ms": finish_ms, "seconds": (finish_ms - submit_ms) / 1000.0}
    info = app_times(app) if (app and app_times is not None) else None
    if info and info.get("finishedTime"):
        res.update(submit_ms=int(info["startedTime"]), finish_ms=int(info["finishedTime"]),
                   seconds=int(info["finishedTime"] - info["startedTime"]) / 1000.0)
    if rc != 0:
        res["output"] = "\n".join(output.splitlines()[-15:])
    return res


class DockerCluster:
    """The container cluster under `name`: attached to when it runs, else started (and removed by close())."""

    def __init__(self, name: str, deadline_ms: int, worker_egress_mbit: float | None = None,
                 mode: str = "active", disk_read_mbps: float | None = None, dn_cache_mb: int | None = None):
        from docker_cluster import cluster as docker_cluster

        try:
            self.cluster = docker_cluster.Cluster.attach(name)
            self.started = False
            log(f"attached to the container cluster {name!r}")
            running = str(self.cluster.rm_jmx().get("EngineMode", "active"))
            if running != mode:
                raise SystemExit(f"real_locality: the cluster {name!r} runs yarnrl.engine.mode={running}, not "
                                 f"{mode}: take it down (docker_cluster/cluster.py down --name {name}) or pick another name")
            if worker_egress_mbit is not None:
                self.cluster.shape_workers(worker_egress_mbit)
            # the disk throttle and the cache budget are the DataNodes' start-time settings: a running cluster must
            # have them already
            spec = self.cluster.spec
            if disk_read_mbps is not None and spec.worker_disk_read_mbps != disk_read_mbps:
                raise SystemExit(f"real_locality: the cluster {name!r} runs with worker disk reads "
                                 f"{spec.worker_disk_read_mbps or 'unthrottled'}, not {disk_read_mbps:g} MB/s: start "
                                 f"it with `docker_cluster/cluster.py up --worker-disk-read-mbps {disk_read_mbps:g}`")
            if dn_cache_mb is not None and spec.dn_cache_mb != dn_cache_mb:
                raise SystemExit(f"real_locality: the cluster {name!r} has a {spec.dn_cache_mb} MB DataNode cache, not "
                                 f"{dn_cache_mb} MB: start it with `docker_cluster/cluster.py up --dn-cache-mb "
                                 f"{dn_cache_mb}`")
        except docker_cluster.ClusterError as e:
            if "no cluster named" not in str(e):
                raise
            spec = docker_cluster.ClusterSpec(name=name, engine_deadline_ms=deadline_ms,
                                              worker_egress_mbit=worker_egress_mbit,
                                              worker_disk_read_mbps=disk_read_mbps,
                                              dn_cache_mb=(docker_cluster.DEFAULT_DN_CACHE_MB if dn_cache_mb is None
                                                           else dn_cache_mb),
                                              rm_properties={"yarnrl.engine.mode": mode} if mode != "active" else {})
            log(f"starting the container cluster {name!r} (docker_cluster/cluster.py; minutes)")
            self.cluster = docker_cluster.Cluster(spec).up(timeout=900, progress=log)
            self.started = True
        egress = self.cluster.spec.worker_egress_mbit
        log(f"worker egress: {f'{egress:g} Mbit/s (tc tbf)' if egress else 'unshaped'}")
        disk = self.cluster.spec.worker_disk_read_mbps
        log(f"worker disk reads: {f'{disk:g} MB/s (blkio), DataNodes drop behind reads' if disk else 'unthrottled'}; "
            f"DataNode cache {self.cluster.spec.dn_cache_mb} MB")
        if self.cluster.spec.workers != 4:
            log(f"note: the cluster has {self.cluster.spec.workers} workers; the emulator's prediction assumes 4")
        self.lab = DockerLab(self.cluster)

    @property
    def cache_bytes(self) -> int:
        return self.cluster.spec.dn_cache_bytes

    def cold_disk(self) -> None:
        """With a throttled disk, evict the block files from the page cache, so every run starts as the first: input
        just written (or read by a policy before) would otherwise be read from memory. Cached replicas stay."""
        if self.cluster.spec.worker_disk_read_mbps is not None:
            self.cluster.drop_block_page_cache()

    def close(self) -> None:
        if self.started:
            self.cluster.down(quiet=True)


class DockerEngine:
    """The engine container restarted with one policy (docker_cluster/cluster.py start_engine); same face as Engine."""

    def __init__(self, cluster, policy: str, options: list[str], workdir: Path):
        settings, args, volumes = [], [], {}
        it = iter(options)
        for opt in it:
            value = next(it)
            if opt == "--set":
                key, _, val = value.partition("=")
                if key == "save_to":  # the learner's table lives on the host, across engine restarts
                    volumes[str(Path(val).parent.resolve())] = ("/state", "rw")
                    value = f"save_to=/state/{Path(val).name}"
                settings.append(value)
            elif opt == "--model":
                volumes[str(Path(value).parent.resolve())] = ("/models", "ro")
                args += ["--model", f"/models/{Path(value).name}"]
            else:
                args += [opt, value]
        self.cluster = cluster
        self.policy, self.workdir = policy, workdir
        cluster.start_engine(policy, settings, args=args, volumes=volumes)

    def metrics(self) -> str:
        with urllib.request.urlopen(self.cluster.metrics_url, timeout=10) as r:  # noqa: S310
            return r.read().decode()

    def stop(self) -> None:
        """Keep the engine container's log (the next start_engine replaces the container; the last one stays for
        `make cluster-down`) and the ResourceManager's, for the fallbacks a run counted."""
        stamp = time.strftime("%H%M%S")
        for role, name in (("engine", f"engine-{self.policy}-{stamp}.log"), ("rm", "rm.log")):
            try:
                (self.workdir / name).write_text(self.cluster.logs(role, lines=100_000))
            except OSError:
                pass


# ---------------------------------------------------------------------------------------------- engine


class Engine:
    """`policy-engine serve` for one policy on a fixed port, with metrics and WebHDFS."""

    def __init__(self, policy: str, port: int, metrics_port: int, webhdfs: str, log_path: Path,
                 options: list[str]):
        from policy_engine.cli import start_engine_subprocess

        self.metrics_port = metrics_port
        self.proc, self.target = start_engine_subprocess(
            policy, ["--port", str(port), "--metrics-port", str(metrics_port), "--webhdfs", webhdfs, "--grace", "1",
                     *options])
        self._log = open(log_path, "a")
        self._pump = None
        import threading

        def pump():
            for line in self.proc.stdout:
                self._log.write(line)
                self._log.flush()

        self._pump = threading.Thread(target=pump, daemon=True)
        self._pump.start()

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10) as r:
            return r.read().decode()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self._log.close()


def shadow_mix(text: str) -> dict:
    """Shadow mode's comparison from the engine's metrics: its would-be locality mix and YARN's on the shadowed
    heartbeats (yarnrl_shadow_containers_total), and YARN's containers that went to an ask the engine also chose
    for that node (agree) or not (differ)."""
    m = Metrics(text)
    out: dict = {"decisions": int(m.total("yarnrl_shadow_decisions_total")), "engine": {}, "yarn": {},
                 "placements": {k: int(v) for k, v in m.by_label("yarnrl_shadow_placements_total", "outcome").items()}}
    for s in m.select("yarnrl_shadow_containers_total"):
        who, loc = s.labels["placed_by"], s.labels["locality"]
        out[who][loc] = out[who].get(loc, 0) + int(s.value)
    return out


def add_counts(a: dict, b: dict) -> dict:
    """Two nested count dicts summed key by key."""
    out = dict(a)
    for k, v in b.items():
        out[k] = add_counts(out.get(k, {}), v) if isinstance(v, dict) else out.get(k, 0) + v
    return out


def mix_shares(counts: dict) -> dict:
    """A locality mix as shares of its total (rounded), with the total."""
    total = sum(counts.values())
    return {"total": total, **{k: round(v / total, 3) for k, v in sorted(counts.items())}} if total else {"total": 0}


def quantile(buckets: list[tuple[float, float]], q: float) -> float:
    """Prometheus' histogram_quantile (policy_engine.metrics_scrape)."""
    return histogram_quantile(buckets, q)


def merge_buckets(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> list[tuple[float, float]]:
    if not a:
        return list(b)
    d = dict(a)
    for k, v in b:
        d[k] = d.get(k, 0.0) + v
    return sorted(d.items())


# ---------------------------------------------------------------------------------------------- data and runs


def size_bytes(workload: str, size: str, maps: int) -> int:
    """Input amount of a size: HiBench's tiny/small (bytes; TeraSort: rows), or `<N>mb` = N MB of input per map
    (larger blocks per map than HiBench's tiny, so that a remote read costs time on a shaped cluster)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)mb", size)
    if m:
        per_map = float(m.group(1)) * MB
        return int(per_map * maps / (100 if workload == "terasort" else 1))
    if size not in HIBENCH[workload]:
        raise ValueError(f"unknown size {size!r}; known: tiny, small, or <N>mb (MB of input per map, e.g. 8mb)")
    return HIBENCH[workload][size]


def set_replication(lab, files: list[str], replication: int, timeout_s: float = 300.0) -> None:
    """WebHDFS SETREPLICATION on each file, then wait until the NameNode reports `replication` hosts per block (the
    mini cluster's generators write with its default of 2; excess replicas go with the DataNodes' next heartbeats)."""
    base = lab.webHdfsUrl()
    for f in files:
        req = urllib.request.Request(f"{base}/webhdfs/v1{f}?op=SETREPLICATION&replication={replication}"
                                     f"&user.name=root", method="PUT")
        with urllib.request.urlopen(req, timeout=30) as r:  # noqa: S310 (the cluster's own NameNode)
            if not json.loads(r.read().decode()).get("boolean"):
                raise RuntimeError(f"SETREPLICATION {replication} refused for {f}")
    until = time.monotonic() + timeout_s
    while True:
        off = [f for f in files if any(len(b["hosts"]) != replication for b in block_hosts(lab, f))]
        if not off:
            return
        if time.monotonic() > until:
            raise RuntimeError(f"replication {replication} not reached after {timeout_s:.0f} s: {off}")
        time.sleep(2)


def block_hosts(lab, path: str) -> list[dict]:
    """Each block of one file: its replica hosts (WebHDFS GETFILEBLOCKLOCATIONS)."""
    doc = _http_get_json(f"{lab.webHdfsUrl()}/webhdfs/v1{path}?op=GETFILEBLOCKLOCATIONS&user.name=root")
    return [{"hosts": sorted(b["hosts"]), "cached": sorted(b.get("cachedHosts") or [])}
            for b in doc["BlockLocations"]["BlockLocation"]]


def prepare(lab, workload: str, size: str, maps: int, cached_share: float, replication: int = 2,
            cache_limit_bytes: int | None = None) -> dict:
    """Generate the input once (same data for every policy), with `replication` replicas per block, and cache part
    of its files (none when a block would not fit a DataNode's cache of `cache_limit_bytes`)."""
    amount = size_bytes(workload, size, maps)
    base = f"/hibench/{workload}-{size}"
    data = f"{base}/input"
    lab.delete(base)
    per_file = amount * (100 if workload == "terasort" else 1) / maps
    # one block per file, as HiBench's 64-128 MB blocks give for its data sizes (RandomTextWriter overshoots a bit)
    block = max(MB, int(math.ceil(per_file * 1.25 / MB)) * MB)
    t0 = time.perf_counter()
    if workload == "terasort":
        gen = json.loads(lab.teraGen(data, amount, maps, block, *([replication] if lab_takes_replication(lab) else [])))
    else:
        gen = json.loads(lab.randomText(data, amount, maps, block,
                                        *([replication] if lab_takes_replication(lab) else [])))
    if not gen["succeeded"]:
        raise RuntimeError(f"generating {data} failed: {gen}")
    files = list(lab.dataFiles(data))  # in MapReduce's task order (longest first)
    if isinstance(lab, DockerLab) and replication != 2:  # (a py4j object answers hasattr for any name)
        spread_input(lab, files, replication)
    elif not lab_takes_replication(lab) and replication != 2:  # the mini cluster's generators write 2 replicas
        set_replication(lab, files, replication)
    if cache_limit_bytes is not None and per_file * 1.05 > cache_limit_bytes:
        log(f"note: {per_file / MB:.1f} MB files do not fit a DataNode's {cache_limit_bytes // MB} MB cache: "
            f"nothing cached")
        cached_share = 0.0
    # CLQLMRS's "part of the input cached": the share of the files MapReduce schedules first. Its ApplicationMaster
    # does not prefer cached blocks (it runs the first pending map, in task order, with a replica on the container's
    # node), so with the cache on later maps' blocks a container sent to a caching node mostly runs an earlier map
    # from disk, whatever the scheduler does.
    cached = files[:round(cached_share * len(files))]
    if cached:
        lab.cache(cached)
    layout = {f: block_hosts(lab, f) for f in files}
    per_node: dict[str, int] = {}
    for blocks in layout.values():
        for b in blocks:
            for h in b["hosts"]:
                per_node[h] = per_node.get(h, 0) + 1
    log(f"prepared {data}: {len(files)} files, block {block // MB} MB, replication {replication}, {len(cached)} "
        f"cached, blocks per node {dict(sorted(per_node.items()))} ({time.perf_counter() - t0:.0f} s)")
    return {"input": data, "files": files, "cached_files": cached, "block_bytes": block, "bytes": amount,
            "base": base, "replication": replication, "layout": layout, "blocks_per_node": per_node}


def node_block_counts(layout: dict[str, list[dict]], hosts: list[str]) -> dict[str, int]:
    """Blocks per worker (every worker listed, 0 for one that holds none)."""
    counts = {h: 0 for h in hosts}
    for blocks in layout.values():
        for b in blocks:
            for h in b["hosts"]:
                counts[h] = counts.get(h, 0) + 1
    return counts


def file_to_respread(layout: dict[str, list[dict]], hosts: list[str]) -> str | None:
    """The file to write again so the input's blocks even out over the workers, or None when every worker holds
    within one block of every other. Picks the last file (task order) with a block on the fullest worker."""
    counts = node_block_counts(layout, hosts)
    if max(counts.values()) - min(counts.values()) <= 1:
        return None
    fullest = max(counts, key=lambda h: (counts[h], h))
    on_fullest = [f for f, blocks in layout.items() if any(fullest in b["hosts"] for b in blocks)]
    return on_fullest[-1] if on_fullest else None


def spread_input(lab, files: list[str], replication: int, rounds: int = 12) -> dict[str, int]:
    """Give a container-cluster input `replication` replicas per block, spread over the workers the way a
    long-running cluster's data is: every file written again from the client (the NameNode chooses the nodes), then
    the file on the fullest worker written again while the workers differ by more than one block, at most `rounds`
    times (a rewrite lands on a random node). Returns the final blocks per worker."""
    hosts = sorted(json.loads(lab.nodeRacks()))
    lab.rewriteFromClient(files, replication)
    for _ in range(rounds):
        layout = {f: block_hosts(lab, f) for f in files}
        f = file_to_respread(layout, hosts)
        if f is None:
            break
        lab.rewriteFromClient([f], replication)
    counts = node_block_counts({f: block_hosts(lab, f) for f in files}, hosts)
    if max(counts.values()) - min(counts.values()) > 1:
        log(f"note: input still uneven after {rounds} rewrites: blocks per worker {counts}")
    return counts


def lab_takes_replication(lab) -> bool:
    """Whether the generator writes the input with the replication asked for. Neither does: both clusters write
    with their default of 2 (one replica on the writer's node, one in the other rack) and set_replication changes
    it afterwards. Written with replication 1, every block stays on the node of the generator's map that wrote it,
    and a generator's few maps ran on two of the four workers in the first try (worker1 and worker4 held all 8
    blocks). Lowering the replication afterwards did not spread them either on the container cluster (all 8 blocks
    stayed on one worker), so there spread_input writes the input again from the client."""
    return False


def run_policy(lab, data: dict, workload: str, jobs: int, interarrival_s: float, tag: str) -> list[dict]:
    handles = []
    for j in range(jobs):
        if j:
            time.sleep(interarrival_s)
        out = f"{data['base']}/out-{tag}-{j}"
        lab.delete(out)
        handles.append(lab.submit(workload, data["input"], out, f"yarnrl.input={data['input']}"))
    results = [json.loads(lab.awaitJob(h)) for h in handles]
    if hasattr(lab, "add_phases"):  # the container cluster (a mini cluster's history stays in its JVM)
        lab.add_phases(results)
    for j in range(jobs):
        lab.delete(f"{data['base']}/out-{tag}-{j}")
    return results


class NodePeaks:
    """Peak containers, memory and vcores in use per node while a policy runs (the RM's /ws/v1/cluster/nodes, every
    0.5 s): whether the engine packs a node as far as YARN's calculator allows (issue 23: DefaultResourceCalculator
    counts memory only, so a 4,096 MB / 4-vcore NodeManager takes 8 containers of 512 MB)."""

    def __init__(self, rm_url: str | None, interval_s: float = 0.5):
        import threading

        self.rm_url, self.interval_s = rm_url, interval_s
        self.peaks: dict[str, dict[str, int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True) if rm_url else None

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                nodes = _http_get_json(f"{self.rm_url}/ws/v1/cluster/nodes", timeout=5)["nodes"]["node"]
            except Exception:  # noqa: BLE001  (a missed sample only; the RM may be busy)
                nodes = []
            for n in nodes:
                p = self.peaks.setdefault(n.get("nodeHostName", "?"), {"containers": 0, "memory_mb": 0, "vcores": 0})
                p["containers"] = max(p["containers"], int(n.get("numContainers", 0)))
                p["memory_mb"] = max(p["memory_mb"], int(n.get("usedMemoryMB", 0)))
                p["vcores"] = max(p["vcores"], int(n.get("usedVirtualCores", 0)))
            self._stop.wait(self.interval_s)

    def __enter__(self) -> NodePeaks:
        if self._thread:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)


def summarize_run(results: list[dict]) -> dict:
    maps = sum(r.get("TOTAL_LAUNCHED_MAPS", 0) for r in results)
    probed = sum(r.get(f"READ_{s}", 0) for r in results for s in STATES)
    cl = sum(r.get("READ_CL", 0) for r in results)
    return {
        "succeeded": all(r["succeeded"] for r in results),
        "maps": maps,
        "data_local_maps": sum(r.get("DATA_LOCAL_MAPS", 0) for r in results),
        "rack_local_maps": sum(r.get("RACK_LOCAL_MAPS", 0) for r in results),
        "off_switch_maps": sum(r.get("OTHER_LOCAL_MAPS", 0) for r in results),
        "read": {s: sum(r.get(f"READ_{s}", 0) for r in results) for s in STATES},
        "local_task_rate": sum(r.get("DATA_LOCAL_MAPS", 0) for r in results) / maps if maps else float("nan"),
        "cache_locality": cl / probed if probed else float("nan"),
        "job_time_s": sum(r["seconds"] for r in results) / len(results),
        "makespan_s": (max(r["finish_ms"] for r in results) - min(r["submit_ms"] for r in results)) / 1000.0,
        # per phase, the mean over the run's jobs (emulator.jobhistory); absent without history files
        **({"phases": mean_phases([r["phases"] for r in results if r.get("phases")])}
           if any(r.get("phases") for r in results) else {}),
        **({"phases_errors": [r["phases_error"] for r in results if r.get("phases_error")]}
           if any(r.get("phases_error") for r in results) else {}),
    }


def mean_std(values: list[float]) -> dict:
    v = [x for x in values if not math.isnan(x)]
    if not v:
        return {"mean": float("nan"), "std": float("nan")}
    m = sum(v) / len(v)
    return {"mean": m, "std": math.sqrt(sum((x - m) ** 2 for x in v) / len(v))}


# ---------------------------------------------------------------------------------------------- emulator


def emulator_params(workload: str, maps: int, cached_share: float, jobs: int, interarrival_s: float,
                    heartbeat_ms: int = HEARTBEAT_MS, replication: int = 2, egress_mbit: float | None = None,
                    block_bytes: int | None = None) -> dict:
    """The emulator scenario shaped like the test clusters (4 x 4 GB nodes in 2 racks, the input's replication,
    512 MB containers, the cluster's heartbeat: 250 ms mini, 500 ms docker; an ApplicationMaster that does not
    prefer cached blocks, as MapReduce's). A shaped worker egress (`egress_mbit`) caps remote reads; the emulator's
    blocks are 32 MB (its smallest), so the cap is scaled by 32 MB / the real block, which keeps a remote read of
    one block as long as on the cluster."""
    block_mb = EMULATOR_BLOCK_MB  # only run times depend on it
    params = {"nodes": 4, "racks": 2, "node_memory_mb": 4096, "replication": replication, "map_memory_mb": 512,
              "maps": maps, "block_mb": block_mb, "cache_gb": cached_share * maps * block_mb / 1024,
              "am_cache_aware": False, "heartbeat_ms": heartbeat_ms, "jobs": jobs, "interarrival_s": interarrival_s,
              "reduces": 1}
    if egress_mbit is not None:
        scale = block_mb * MB / block_bytes if block_bytes else 1.0
        params["remote_read_mb_s"] = round(egress_mbit / 8 * 1e6 / MB * scale, 4)
    return params


def emulator_prediction(policy: str, workload: str, params: dict, episodes: int, model: str | None,
                        seed: int = 0) -> dict:
    from emulator.drivers import InProcessDriver
    from emulator.scenario import get_scenario
    from policy_engine.policy import create

    scenario = get_scenario(f"locality-{workload}", **params)
    kwargs = {}
    if policy == "clqlmrs":
        kwargs = {"learn": False, "seed": seed}
        if model:
            kwargs["model"] = model
    out: dict[str, list[float]] = {}
    for ep in range(episodes):
        driver = InProcessDriver(create(policy, **kwargs))
        m = scenario.run_episode(driver, seed=1000 + 100 * seed + ep)
        for k in ("local_task_rate", "cache_locality", "job_time_s", "makespan_s"):
            out.setdefault(k, []).append(m[k])
    return {k: mean_std(v) for k, v in out.items()}


# ---------------------------------------------------------------------------------------------- report


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [k for k in results["experiments"]]
    metrics = (("local_task_rate", "local-task rate"), ("cache_locality", "cache locality"),
               ("job_time_s", "mean job time (s)"), ("makespan_s", "makespan (s)"))
    fig, axes = plt.subplots(len(keys), 4, figsize=(16, 3.2 * len(keys)), squeeze=False)
    for row, key in enumerate(keys):
        exp = results["experiments"][key]
        names = list(exp["policies"])
        for col, (m, label) in enumerate(metrics):
            ax = axes[row][col]
            real = [exp["policies"][p][m]["mean"] for p in names]
            err = [exp["policies"][p][m]["std"] for p in names]
            emu = [exp["policies"][p]["emulator"].get(m, {}).get("mean", float("nan")) for p in names]
            x = range(len(names))
            ax.bar([i - 0.2 for i in x], real, 0.4, yerr=err, label=f"{results['cluster']} cluster",
                   color="tab:blue")
            ax.bar([i + 0.2 for i in x], emu, 0.4, label="emulator", color="tab:gray")
            ax.set_xticks(list(x), names)
            ax.set_title(f"{key}: {label}", fontsize=9)
            if row == 0 and col == 0:
                ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fmt(ms: dict, digits: int = 3) -> str:
    return f"{ms['mean']:.{digits}f} ± {ms['std']:.{digits}f}"


def print_table(key: str, exp: dict) -> None:
    log(f"\n== {key} ({exp['runs']} runs x {exp['jobs']} jobs, {exp['maps']} maps each, "
        f"{exp['cached_files']}/{exp['files']} input files cached)  [emulator's prediction in brackets]")
    head = (f"{'policy':<8} {'local-task rate':>24} {'cache locality':>24} {'DL/RL/OFF maps':>15} "
            f"{'job time s':>24} {'makespan s':>24} {'p50/p99 ms':>12} {'labels CL ok':>12}")
    log(head)
    for name, p in exp["policies"].items():
        e = p["emulator"]
        counts = f"{p['data_local_maps']}/{p['rack_local_maps']}/{p['off_switch_maps']}"
        lat = f"{p['decision_latency_ms']['p50']:.2f}/{p['decision_latency_ms']['p99']:.2f}"
        log(f"{name:<8} {fmt(p['local_task_rate']):>14} [{e['local_task_rate']['mean']:.2f}] "
            f"{fmt(p['cache_locality']):>14} [{e['cache_locality']['mean']:.2f}] {counts:>15} "
            f"{fmt(p['job_time_s'], 1):>14} [{e['job_time_s']['mean']:5.1f}] "
            f"{fmt(p['makespan_s'], 1):>14} [{e['makespan_s']['mean']:5.1f}] {lat:>12} "
            f"{p['engine_labels']['cl']:>5}/{p['read']['CL']:<5}")


def plugin_cell(plugin: dict | None) -> str:
    if not plugin:
        return "-"
    return (f"{plugin.get('engine_containers', 0)} / {plugin.get('native_containers', 0)}, "
            f"{plugin.get('fallbacks', 0)} ({plugin.get('fallbacks_timeout', 0)} deadline)")


def markdown_table(key: str, exp: dict) -> str:
    """One experiment as the Markdown table benchmarks/README.md shows (emulator prediction in brackets)."""
    loads = [r["load_average"] for p in exp["policies"].values() for r in p.get("per_run", []) if "load_average" in r]
    load = f"; load average {min(loads):.0f}-{max(loads):.0f} on 2 cores" if loads else ""
    rows = [f"**{key}** ({exp['runs']} runs x {exp['jobs']} concurrent jobs x {exp['maps']} maps; "
            f"{exp['cached_files']}/{exp['files']} input files cached; emulator prediction in brackets{load})", "",
            "| policy | local-task rate | cache locality | data-local / rack-local / off-switch maps | mean job time (s) "
            "| makespan (s) | decision latency p50 / p99 (ms), calls | engine-placed / native containers, fallbacks "
            "| engine CL labels / maps' own CL |",
            "|---|---|---|---|---|---|---|---|---|"]
    for name, p in exp["policies"].items():
        e, lat = p["emulator"], p["decision_latency_ms"]
        rows.append(
            f"| {name} | {fmt(p['local_task_rate'], 2)} [{e['local_task_rate']['mean']:.2f}] "
            f"| {fmt(p['cache_locality'], 2)} [{e['cache_locality']['mean']:.2f}] "
            f"| {p['data_local_maps']} / {p['rack_local_maps']} / {p['off_switch_maps']} "
            f"| {fmt(p['job_time_s'], 1)} [{e['job_time_s']['mean']:.1f}] "
            f"| {fmt(p['makespan_s'], 1)} [{e['makespan_s']['mean']:.1f}] "
            f"| {lat['p50']:.2f} / {lat['p99']:.2f}, {int(lat['count'])} "
            f"| {plugin_cell(p.get('plugin'))} | {p['engine_labels']['cl']} / {p['read']['CL']} |")
    return "\n".join(rows)


def partial_report(path: Path, episodes: int = 5) -> str:
    """A Markdown table of a run cut short (its JSON's `in_progress` runs), with the emulator's prediction for the
    recorded shape: what `--report PATH` prints."""
    doc = json.loads(Path(path).read_text())
    out = []
    for key, per_policy in (doc.get("in_progress") or {}).items():
        workload, size = key.split("-", 1)
        per_file = doc.get("block_bytes", {}).get(key) or int(
            size_bytes(workload, size, doc["maps"]) * (100 if workload == "terasort" else 1) / doc["maps"])
        cached = (doc["cached_share"] if doc["cluster"] != "docker"
                  or per_file * 1.05 <= doc.get("dn_cache_bytes", DOCKER_CACHE_BYTES) else 0.0)
        params = emulator_params(
            workload, doc["maps"], cached, doc["jobs"], doc.get("interarrival_s", 3.0),
            DOCKER_HEARTBEAT_MS if doc["cluster"] == "docker" else HEARTBEAT_MS, doc.get("replication", 2),
            doc.get("worker_egress_mbit"), per_file)
        out += [f"**{key}** ({doc['cluster']}; runs per policy as listed, cut short; {doc['jobs']} concurrent jobs x "
                f"{doc['maps']} maps; replication {doc.get('replication', 2)}; worker egress "
                f"{doc.get('worker_egress_mbit') or 'unshaped'} Mbit/s; emulator prediction in brackets)", "",
                "| policy | runs | local-task rate | cache-local share (engine labels) | DL / RL / OFF maps | mean job time (s) "
                "| makespan (s) | engine / native containers, fallbacks (deadline, error) | engine refusals | load average per run |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for name, runs in per_policy.items():
            if not runs:
                out.append(f"| {name} | 0 | not run | | | | | | | |")
                continue
            e = emulator_prediction(name, workload, params, episodes, doc.get("clqlmrs_model"), doc.get("seed", 0))
            ms = {m: mean_std([r[m] for r in runs]) for m in ("local_task_rate", "cache_locality", "job_time_s",
                                                             "makespan_s")}
            plug = {k: sum(r["plugin"].get(k, 0) for r in runs) for k in runs[0]["plugin"]}
            refusals: dict[str, int] = {}
            for r in runs:
                for k, v in (r.get("engine_errors") or {}).items():
                    code = re.search(r'code="(\w+)"', k)
                    refusals[code.group(1) if code else k] = refusals.get(code.group(1) if code else k, 0) + v
            out.append(
                f"| {name} | {len(runs)} | {fmt(ms['local_task_rate'], 2)} [{e['local_task_rate']['mean']:.2f}] "
                f"| {fmt(ms['cache_locality'], 2)} [{e['cache_locality']['mean']:.2f}] "
                f"| {sum(r['data_local_maps'] for r in runs)} / {sum(r['rack_local_maps'] for r in runs)} / "
                f"{sum(r['off_switch_maps'] for r in runs)} "
                f"| {fmt(ms['job_time_s'], 1)} [{e['job_time_s']['mean']:.1f}] "
                f"| {fmt(ms['makespan_s'], 1)} [{e['makespan_s']['mean']:.1f}] "
                f"| {plug.get('engine_containers', 0)} / {plug.get('native_containers', 0)}, {plug.get('fallbacks', 0)} "
                f"({plug.get('fallbacks_timeout', 0)}, {plug.get('fallbacks_error', 0)}) "
                f"| {', '.join(f'{k} {v}' for k, v in refusals.items()) or '0'} "
                f"| {', '.join(str(round(r['load_average'])) for r in runs)} |")
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------- main


def calibrated_report(results: Path, calibration: Path, episodes: int = 5) -> str:
    """The calibrated emulator's job time and makespan beside a results file's measured ones (emulator/calibration.py;
    its measured block layout and real per-map size), or one line saying why not."""
    from emulator.calibration import (CalibrationError, format_rows, load_calibration, load_points, ranking_preserved,
                                      residual_table)

    try:
        doc = load_calibration(calibration, warn=log)
        points, shape, _ = load_points([results])
    except CalibrationError as e:
        return f"calibrated emulator: not shown ({e})"
    if shape != doc["shape"]:
        diff = ", ".join(f"{k} {shape.get(k)} vs {doc['shape'].get(k)}" for k in shape
                         if shape.get(k) != doc["shape"].get(k))
        return f"calibrated emulator: not shown ({calibration.name} is for another cluster shape: {diff})"
    rows = residual_table(points, doc["time_model"], episodes)
    lines = [f"calibrated emulator ({calibration.name}) beside the measured numbers:", format_rows(rows)]
    for exp, r in ranking_preserved(rows).items():
        lines.append(f"ranking {exp}: cluster {' < '.join(r['cluster'])}, emulator {' < '.join(r['emulator'])}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--cluster", choices=("mini", "docker"), default="mini",
                   help="mini: MiniDFSCluster + MiniYARNCluster in one JVM driven over py4j (default); docker: the "
                        "container cluster of docker_cluster/cluster.py (4 workers in 2 racks; attached to when running "
                        "under --docker-name, else started and removed again)")
    p.add_argument("--docker-name", default="yarnrl", help="the container cluster's name (default %(default)s)")
    p.add_argument("--mode", choices=("active", "shadow"), default="active",
                   help="active: the engine places (default); shadow (docker only): the ResourceManager runs with "
                        "yarnrl.engine.mode=shadow, YARN places every container and each policy run reports the "
                        "engine's would-be locality mix beside YARN's on the same heartbeats")
    p.add_argument("--policies", default=",".join(POLICIES), help="comma-separated (default %(default)s)")
    p.add_argument("--workloads", default="wordcount", help="wordcount,sort,terasort (default %(default)s)")
    p.add_argument("--sizes", default="tiny",
                   help="HiBench sizes tiny,small, or <N>mb: N MB of input per map (e.g. 8mb; larger blocks, so that "
                        "remote reads cost time with --worker-egress-mbit; files over a DataNode's cache are not "
                        "cached) (default %(default)s)")
    p.add_argument("--replication", type=int, default=2,
                   help="HDFS replication of the input (default 2). With 4 workers and 2 replicas every node holds "
                        "half the blocks; a real cluster of 12+ nodes with 3 replicas holds at most a quarter: "
                        "--replication 1 gives 4 workers that shape. The emulator's prediction uses the same")
    p.add_argument("--worker-egress-mbit", type=float, default=None, metavar="MBIT",
                   help="docker only: limit every worker's eth0 egress to MBIT Mbit/s (docker_cluster/cluster.py "
                        "--worker-egress-mbit; tc tbf, needs root) so that a remote block read costs bandwidth and "
                        "a local one does not, as on a real cluster behind oversubscribed links; the emulator caps "
                        "remote reads at the same rate. Default: leave the cluster as it is (unshaped when started "
                        "here)")
    p.add_argument("--worker-disk-read-mbps", type=float, default=None, metavar="MBPS",
                   help="docker only: the workers' disk read rate (docker_cluster/cluster.py up "
                        "--worker-disk-read-mbps: blkio throttle, DataNodes drop the page cache behind reads), so that "
                        "a read of an uncached replica costs disk time and a cached one does not; a running cluster "
                        "must have been started with it, one started here gets it. Every policy run starts with the "
                        "block files out of the page cache. Default: the cluster's (unthrottled when started here)")
    p.add_argument("--dn-cache-mb", type=int, default=None, metavar="MB",
                   help="docker only: each DataNode's cache budget (up --dn-cache-mb; files larger than it are not "
                        "cached). Default: the cluster's (8 MB when started here)")
    p.add_argument("--runs", type=int, default=3, help="runs per policy and workload (default 3)")
    p.add_argument("--jobs", type=int, default=2, help="concurrent jobs per run (default 2)")
    p.add_argument("--interarrival-s", type=float, default=3.0, help="seconds between job submissions (default 3)")
    p.add_argument("--maps", type=int, default=8, help="input files = map tasks per job (HiBench: 8; default 8)")
    p.add_argument("--cached-share", type=float, default=0.5, help="share of input files cached (default 0.5)")
    p.add_argument("--clqlmrs-model", default=str(DEFAULT_CLQLMRS_MODEL.relative_to(ROOT)),
                   help="Q-table trained by `emulator train --algo clqlmrs` on the emulator shaped like this cluster "
                        "(sim-to-real; online learning continues from it); 'none' starts from an empty table "
                        "(default %(default)s)")
    p.add_argument("--policy-set", action="append", default=[], metavar="POLICY:KEY=VALUE",
                   help="a policy option, repeatable (e.g. delay:node_locality_delay=10)")
    p.add_argument("--deadline-ms", type=int, default=50, help="RlScheduler's per-call deadline (default 50)")
    p.add_argument("--engine-settle-s", type=float, default=3.0,
                   help="seconds between an engine's start and the first job, for the plugin to reconnect (default 3)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of CLQLMRS's exploration draws (engine --set seed=) and of the emulator's episodes "
                        "(default 0); HDFS block placement and RandomTextWriter's text are Hadoop's own draws")
    p.add_argument("--emulator-episodes", type=int, default=5, help="emulator episodes per prediction (default 5)")
    p.add_argument("--out", type=Path, default=RESULTS, help=f"results directory (default {RESULTS})")
    p.add_argument("--workdir", type=Path, default=TARGET / "real-locality",
                   help="mini cluster and logs (default yarn_plugin/target/real-locality)")
    p.add_argument("--report", type=Path, metavar="JSON",
                   help="print the Markdown table of a run cut short (its partial JSON) with the emulator's prediction, "
                        "and exit")
    p.add_argument("--calibration", type=Path, default=DEFAULT_CALIBRATION,
                   help="calibration file of `emulator calibrate`: print the calibrated emulator's job time and "
                        "makespan beside the measured ones when the cluster shape matches; 'none' to skip "
                        "(default %(default)s)")
    p.add_argument("--calibrated-report", type=Path, metavar="JSON",
                   help="print the calibrated emulator's prediction beside a results file's measurements, and exit")
    args = p.parse_args(argv)
    if args.report:
        log(partial_report(args.report, args.emulator_episodes))
        return 0
    if args.calibrated_report:
        log(calibrated_report(args.calibrated_report, args.calibration, args.emulator_episodes))
        return 0

    policies = [x for x in args.policies.split(",") if x]
    workloads = [x for x in args.workloads.split(",") if x]
    sizes = [x for x in args.sizes.split(",") if x]
    from policy_engine.policy import UnknownPolicy, spec

    for name in policies:
        try:
            spec(name)
        except UnknownPolicy as e:
            p.error(str(e))
    for w in workloads:
        if w not in HIBENCH:
            p.error(f"unknown workload {w!r}; known: {', '.join(HIBENCH)}")
    for s in sizes:
        try:
            size_bytes(workloads[0] if workloads else "wordcount", s, max(args.maps, 1))
        except ValueError as e:
            p.error(str(e))
    if not 1 <= args.replication <= 4:
        p.error(f"--replication must be between 1 and the 4 DataNodes, got {args.replication}")
    if args.worker_egress_mbit is not None:
        if args.cluster != "docker":
            p.error("--worker-egress-mbit shapes the container cluster's network: it needs --cluster docker")
        if not (math.isfinite(args.worker_egress_mbit) and args.worker_egress_mbit > 0):
            p.error(f"--worker-egress-mbit must be a positive number, got {args.worker_egress_mbit}")
    if args.cluster != "docker" and (args.worker_disk_read_mbps is not None or args.dn_cache_mb is not None):
        p.error("--worker-disk-read-mbps and --dn-cache-mb set up the container cluster: they need --cluster docker")
    if args.worker_disk_read_mbps is not None and not (math.isfinite(args.worker_disk_read_mbps)
                                                       and args.worker_disk_read_mbps > 0):
        p.error(f"--worker-disk-read-mbps must be a positive number, got {args.worker_disk_read_mbps}")
    if args.dn_cache_mb is not None and args.dn_cache_mb < 0:
        p.error(f"--dn-cache-mb must be 0 or more, got {args.dn_cache_mb}")
    if args.mode == "shadow" and args.cluster != "docker":
        p.error("--mode shadow runs on the container cluster: it needs --cluster docker")
    if args.runs < 1 or args.jobs < 1 or args.maps < 1 or not 0 <= args.cached_share <= 1:
        p.error("--runs, --jobs and --maps must be positive and --cached-share in [0, 1]")
    if args.clqlmrs_model in ("none", ""):
        args.clqlmrs_model = None
    elif not Path(args.clqlmrs_model).is_absolute() and not Path(args.clqlmrs_model).exists():
        args.clqlmrs_model = str(ROOT / args.clqlmrs_model)
    if args.clqlmrs_model and not Path(args.clqlmrs_model).exists():
        p.error(f"--clqlmrs-model {args.clqlmrs_model} does not exist")
    options: dict[str, list[str]] = {name: [] for name in policies}
    for item in args.policy_set:
        name, _, kv = item.partition(":")
        if name not in options or "=" not in kv:
            p.error(f"--policy-set takes POLICY:KEY=VALUE for a chosen policy, got {item!r}")
        options[name] += ["--set", kv]

    if args.cluster == "mini":
        build_plugin()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.workdir.exists():
        shutil.rmtree(args.workdir)
    args.workdir.mkdir(parents=True)
    if "clqlmrs" in options:
        if args.clqlmrs_model:
            options["clqlmrs"] += ["--model", str(Path(args.clqlmrs_model).resolve())]
        # online learning continues across runs and experiments: each engine restart resumes this table
        options["clqlmrs"] += ["--set", f"save_to={args.workdir / 'clqlmrs-online.safetensors'}",
                               "--set", f"seed={args.seed}"]

    stamp = "-".join([*(["docker"] if args.cluster == "docker" else []), *(["shadow"] if args.mode == "shadow" else []),
                      *workloads, *sizes,
                      *([f"rep{args.replication}"] if args.replication != 2 else []),
                      *([f"egress{args.worker_egress_mbit:g}mbit"] if args.worker_egress_mbit else []),
                      *([f"disk{args.worker_disk_read_mbps:g}mbps"] if args.worker_disk_read_mbps else []),
                      *([f"cache{args.cached_share:g}"] if args.cluster == "docker" and args.cached_share
                        and args.worker_disk_read_mbps else []),
                      f"r{args.runs}"])
    port, metrics_port = free_port(), free_port()
    t_start = time.perf_counter()
    if args.cluster == "mini":
        log(f"starting the mini cluster (engine address 127.0.0.1:{port}); JVM log {args.workdir / 'jvm.log'}")
        cluster = MiniCluster(args.workdir, f"127.0.0.1:{port}", args.deadline_ms)
        lab = cluster.lab

        def start_engine(name: str):
            return Engine(name, port, metrics_port, lab.webHdfsUrl(), args.workdir / f"engine-{name}.log",
                          options[name])
    else:
        cluster = DockerCluster(args.docker_name, args.deadline_ms, args.worker_egress_mbit, args.mode,
                                args.worker_disk_read_mbps, args.dn_cache_mb)
        lab = cluster.lab

        def start_engine(name: str):
            return DockerEngine(cluster.cluster, name, options[name], args.workdir)
    results: dict = {"cluster": args.cluster, "mode": args.mode, "runs": args.runs, "jobs": args.jobs, "maps": args.maps,
                     "cached_share": args.cached_share, "node_racks": json.loads(lab.nodeRacks()),
                     "clqlmrs_model": args.clqlmrs_model, "seed": args.seed, "replication": args.replication,
                     "worker_egress_mbit": (cluster.cluster.spec.worker_egress_mbit if args.cluster == "docker"
                                            else None),
                     # the container cluster's disk read throttle (MB/s, None: unthrottled; the DataNodes then drop
                     # the page cache behind reads) and each DataNode's cache budget
                     **({"worker_disk_read_mbps": cluster.cluster.spec.worker_disk_read_mbps,
                         "drop_behind_reads": cluster.cluster.spec.drop_behind_reads,
                         "dn_cache_bytes": cluster.cache_bytes} if args.cluster == "docker" else {}),
                     "load_average_start": os.getloadavg(), "experiments": {}}
    log(f"{args.cluster} cluster up in {time.perf_counter() - t_start:.0f} s: {results['node_racks']}")
    try:
        from tqdm import tqdm

        total = len(workloads) * len(sizes) * args.runs * len(policies)
        bar = tqdm(total=total, desc="policy runs", unit="run", file=sys.stderr)
        for size in sizes:  # every workload at the smaller size first: a run cut short has the whole small table
            for workload in workloads:
                key = f"{workload}-{size}"
                data = prepare(lab, workload, size, args.maps, args.cached_share, args.replication,
                               cluster.cache_bytes if args.cluster == "docker" else None)
                per_policy: dict[str, dict] = {name: {"runs": [], "latency": [], "labels": {}} for name in policies}
                for run in range(args.runs):
                    order = policies[run % len(policies):] + policies[:run % len(policies)]
                    for name in order:
                        if args.cluster == "docker":
                            cluster.cold_disk()
                        before = json.loads(lab.pluginMetrics())
                        engine = start_engine(name)
                        # the plugin's channel to the previous engine broke when it stopped; its reconnect back-off
                        # (~1 s) would answer the first heartbeats UNAVAILABLE (native placement) without a pause
                        time.sleep(args.engine_settle_s)
                        try:
                            with NodePeaks(cluster.cluster.rm_url if args.cluster == "docker" else None) as peaks:
                                rs = run_policy(lab, data, workload, args.jobs, args.interarrival_s,
                                                f"{name}-{run}")
                            text = engine.metrics()
                            scraped = Metrics(text)
                        finally:
                            engine.stop()
                        summary = summarize_run(rs)
                        if peaks.peaks:
                            summary["node_peaks"] = dict(sorted(peaks.peaks.items()))
                        after = json.loads(lab.pluginMetrics())
                        # the plugin's counters over this policy's run: how much of it the engine really placed
                        summary["plugin"] = {k: after[k] - before.get(k, 0) for k in after
                                             if isinstance(after[k], (int, float)) and k.startswith(
                                                 ("engine_", "native_", "fallbacks", "shadow_"))}
                        if args.mode == "shadow":
                            summary["shadow"] = shadow_mix(text)
                        if not sum(summary["read"].values()):  # no per-map probe (docker): the engine's labels
                            run_labels = {k: int(v) for k, v in
                                          scraped.by_label("yarnrl_map_containers_read_total", "state").items()}
                            summary["read"] = {st: run_labels.get(st.lower(), 0) for st in STATES}
                            labelled = sum(summary["read"].values())
                            summary["cache_locality"] = (summary["read"]["CL"] / labelled if labelled
                                                         else float("nan"))
                        # requests the engine refused or failed (by rpc and status code), for the plugin's fallbacks
                        summary["engine_errors"] = {
                            "{" + ",".join(f'{k}="{v}"' for k, v in e.labels.items()) + "}": int(e.value)
                            for e in scraped.select("yarnrl_request_errors_total") if e.value}
                        summary["jobs"] = rs
                        summary["load_average"] = round(os.getloadavg()[0], 1)  # 1-min, at the run's end
                        per_policy[name]["runs"].append(summary)
                        per_policy[name]["latency"] = merge_buckets(
                            per_policy[name]["latency"],
                            scraped.buckets("yarnrl_decision_latency_seconds", rpc="schedule"))
                        for st, v in scraped.by_label("yarnrl_map_containers_read_total", "state").items():
                            per_policy[name]["labels"][st] = per_policy[name]["labels"].get(st, 0) + int(v)
                        bar.update(1)
                        # each policy run as it ends, so a run cut short keeps what it measured
                        results.setdefault("block_bytes", {})[key] = int(
                            data["bytes"] * (100 if workload == "terasort" else 1) / args.maps)
                        results["interarrival_s"] = args.interarrival_s
                        (args.out / f"real_locality-{stamp}.json").write_text(json.dumps(
                            {**results, "partial": True, "in_progress": {key: {
                                n: [{k: v for k, v in r.items() if k != "jobs"} for r in pp["runs"]]
                                for n, pp in per_policy.items()}}}, indent=1))
                        bar.set_postfix_str(f"{key} {name}: local {summary['local_task_rate']:.2f} cache "
                                            f"{summary['cache_locality']:.2f} job {summary['job_time_s']:.1f}s")
                params = emulator_params(workload, args.maps, len(data["cached_files"]) / max(len(data["files"]), 1),
                                         args.jobs, args.interarrival_s,
                                         DOCKER_HEARTBEAT_MS if args.cluster == "docker" else HEARTBEAT_MS,
                                         args.replication, args.worker_egress_mbit,
                                         int(data["bytes"] * (100 if workload == "terasort" else 1) / args.maps))
                exp = {"runs": args.runs, "jobs": args.jobs, "maps": args.maps, "files": len(data["files"]),
                       "cached_files": len(data["cached_files"]), "block_bytes": data["block_bytes"],
                       "input_bytes": data["bytes"], "replication": data["replication"],
                       "blocks_per_node": data["blocks_per_node"], "worker_egress_mbit": args.worker_egress_mbit,
                       "emulator_params": params, "policies": {}}
                for name in policies:
                    runs = per_policy[name]["runs"]
                    lat = per_policy[name]["latency"]
                    exp["policies"][name] = {
                        **{m: mean_std([r[m] for r in runs]) for m in ("local_task_rate", "cache_locality",
                                                                      "job_time_s", "makespan_s")},
                        "all_succeeded": all(r["succeeded"] for r in runs),
                        "data_local_maps": sum(r["data_local_maps"] for r in runs),
                        "rack_local_maps": sum(r["rack_local_maps"] for r in runs),
                        "off_switch_maps": sum(r["off_switch_maps"] for r in runs),
                        "maps": sum(r["maps"] for r in runs),
                        "read": {s: sum(r["read"][s] for r in runs) for s in STATES},
                        "engine_labels": {s: per_policy[name]["labels"].get(s, 0)
                                          for s in ("cl", "dl", "crl", "drl", "no")},
                        "plugin": {k: sum(r["plugin"].get(k, 0) for r in runs) for k in runs[0]["plugin"]},
                        # the most containers / MB / vcores in use on any node in any run (docker: RM REST)
                        "node_peak": {d: max((p[d] for r in runs for p in r.get("node_peaks", {}).values()),
                                             default=0) for d in ("containers", "memory_mb", "vcores")},
                        "decision_latency_ms": {"p50": quantile(lat, 0.5) * 1000, "p99": quantile(lat, 0.99) * 1000,
                                                "count": lat[-1][1] if lat else 0},
                        "emulator": emulator_prediction(name, workload, params, args.emulator_episodes,
                                                        args.clqlmrs_model, args.seed),
                        "per_run": [{k: v for k, v in r.items() if k != "jobs"} for r in runs],
                    }
                    if args.mode == "shadow":
                        mix: dict = {}
                        for r in runs:
                            mix = add_counts(mix, r["shadow"])
                        mix["engine_shares"] = mix_shares(mix.get("engine", {}))
                        mix["yarn_shares"] = mix_shares(mix.get("yarn", {}))
                        exp["policies"][name]["shadow"] = mix
                        log(f"{key} {name} in shadow: engine would place {mix['engine_shares']}, YARN placed "
                            f"{mix['yarn_shares']} on the same {mix['decisions']} heartbeats; YARN's container went "
                            f"to an ask the engine also chose for the node: {mix['placements']}")
                results["experiments"][key] = exp
                print_table(key, exp)
                log("\n" + markdown_table(key, exp))
                # what is done so far survives a run cut short (the file is rewritten whole at the end)
                (args.out / f"real_locality-{stamp}.json").write_text(json.dumps({**results, "partial": True},
                                                                                 indent=1))
                lab.uncacheAll()
                lab.delete(data["base"])
        bar.close()
        results["plugin"] = json.loads(lab.pluginMetrics())
    finally:
        cluster.close()
    results["seconds"] = time.perf_counter() - t_start
    results["load_average_end"] = os.getloadavg()
    (args.out / f"real_locality-{stamp}.json").write_text(json.dumps(results, indent=1))
    png = args.out / f"real_locality-{stamp}.png"
    plot(results, png)
    if str(args.calibration) != "none":
        log("\n" + calibrated_report(args.out / f"real_locality-{stamp}.json", args.calibration, args.emulator_episodes))
    log(f"\nplugin: {results['plugin']}")
    log(f"wrote {args.out / f'real_locality-{stamp}.json'} and {png} ({results['seconds'] / 60:.1f} min)")
    # the JSON: per policy over every experiment run (the first experiment when there is one)
    summary = {"cluster": args.cluster, "mode": args.mode, "runs": args.runs, "policies": {}}
    first = next(iter(results["experiments"].values()))
    for name in policies:
        pol = first["policies"][name]
        summary["policies"][name] = {k: pol[k] for k in ("local_task_rate", "cache_locality", "job_time_s",
                                                         "makespan_s", "emulator", "shadow") if k in pol}
    if len(results["experiments"]) > 1:
        summary["experiments"] = {k: {name: {m: v["policies"][name][m] for m in
                                             ("local_task_rate", "cache_locality", "job_time_s", "makespan_s")}
                                      for name in policies} for k, v in results["experiments"].items()}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
