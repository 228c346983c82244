"""A real Hadoop 3.5.0 cluster in containers with RlScheduler and the policy engine (docker/cluster.py).

The tests share one cluster (conftest.py) and run in file order: the destructive ones (engine killed, RM
restarted) come last.
"""

from __future__ import annotations

import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import cluster as docker_cluster  # noqa: E402  (docker/cluster.py, on sys.path through conftest.py)
import hibench  # noqa: E402  (benchmarks/hibench.py)

WORDCOUNT_INPUT, _ = hibench.paths("wordcount")


def wordcount(cluster, out: str, timeout: float = 900) -> str:
    """HiBench's wordcount job over the prepared input (tagged with its input path for the engine)."""
    cluster.exec(["hdfs", "dfs", "-rm", "-r", "-f", "-skipTrash", out], timeout=120)
    _, output = cluster.exec(hibench.run_command("wordcount", WORDCOUNT_INPUT, out, docker_cluster.EXAMPLES_JAR),
                             timeout=timeout)
    cluster.exec(["hdfs", "dfs", "-test", "-e", f"{out}/_SUCCESS"], timeout=120)
    return output


def small_wordcount(cluster, out: str, timeout: float = 900) -> str:
    """WordCount over one file of the input with one reduce: two task containers, to check a cluster still runs
    jobs (and asks the engine) without paying for HiBench's 8 + 8 tasks on two cores."""
    cluster.exec(["hdfs", "dfs", "-rm", "-r", "-f", "-skipTrash", out], timeout=120)
    part = f"{WORDCOUNT_INPUT}/part-m-00000"
    _, output = cluster.exec(["hadoop", "jar", docker_cluster.EXAMPLES_JAR, "wordcount", "-D",
                              f"mapreduce.job.tags=yarnrl.input={part}", "-D", "mapreduce.job.reduces=1", part, out],
                             timeout=timeout)
    cluster.exec(["hdfs", "dfs", "-test", "-e", f"{out}/_SUCCESS"], timeout=120)
    return output


def wait_for(cond, timeout: float, what: str, interval: float = 1.0):
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        v = cond()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s: {what}")


def test_cluster_boots_with_four_hosts_in_two_racks(cluster):
    assert cluster.live_datanodes() == ["worker1", "worker2", "worker3", "worker4"]
    assert cluster.running_nodemanagers() == {"worker1": "/rack1", "worker2": "/rack1",
                                              "worker3": "/rack2", "worker4": "/rack2"}
    jmx = cluster.rm_jmx()
    assert jmx["EngineAddress"] == "engine:50051"
    assert jmx["BreakerState"] == "CLOSED"
    # the plugin jar deployed as the README says: in $HADOOP_HOME/share/hadoop/yarn/lib, scheduler class set
    _, ls = cluster.exec("ls /opt/hadoop/share/hadoop/yarn/lib", role="rm")
    assert "yarnrl-yarn-plugin-0.1.0.jar" in ls.split()
    _, site = cluster.exec("cat /opt/hadoop/etc/hadoop/yarn-site.xml", role="rm")
    assert "<value>org.yarnrl.yarn.RlScheduler</value>" in site
    # the HDFS side sees the same racks as YARN
    _, topo = cluster.exec(["hdfs", "dfsadmin", "-printTopology"], timeout=120)
    assert "Rack: /rack1" in topo and "Rack: /rack2" in topo
    # the engine serves the requested policy, published on loopback
    with urllib.request.urlopen(cluster.metrics_url, timeout=5) as r:
        assert r.status == 200
    assert cluster.metrics_url.startswith("http://127.0.0.1:")


def test_hibench_wordcount_tiny_runs_through_the_engine(cluster, tmp_path):
    out = tmp_path / "report"
    rc = hibench.main(["--cluster", "docker", "--name", cluster.spec.name, "--workloads", "wordcount",
                       "--profile", "tiny", "--policies", "delay", "--report-dir", str(out)])
    assert rc == 0
    rows = hibench.parse_report(out / "hibench.report")
    assert [r["Type"] for r in rows] == ["HadoopWordcount"]
    size = int(rows[0]["Input_data_size"])
    assert size >= 32_000  # randomtextwriter writes at least totalbytes (plus SequenceFile framing)
    duration = float(rows[0]["Duration(s)"])
    assert duration > 0 and int(rows[0]["Throughput(bytes/s)"]) == int(size / duration)
    assert int(rows[0]["Throughput/node"]) == int(rows[0]["Throughput(bytes/s)"]) // 4
    assert "| wordcount | delay | " in (out / "hibench-compare.md").read_text()
    assert (out / "hibench.png").stat().st_size > 0
    # the engine decided: counted by the plugin on the RM's JMX and by the engine itself
    assert cluster.rm_jmx()["EngineDecisions"] > 0
    assert cluster.engine_metric("yarnrl_decisions_total") > 0
    # the input is tagged, so the engine looked its blocks up on WebHDFS
    assert cluster.engine_metric("yarnrl_webhdfs_lookups_total") > 0


def test_cache_directive_shows_in_webhdfs_cached_hosts(cluster):
    _, listing = cluster.exec(["hdfs", "dfs", "-ls", "-C", WORDCOUNT_INPUT], timeout=120)
    part = next(p for p in listing.split() if "/part-" in p)
    cluster.exec(["hdfs", "cacheadmin", "-addPool", "yarnrl-test"], timeout=120)
    cluster.exec(["hdfs", "cacheadmin", "-addDirective", "-path", part, "-pool", "yarnrl-test",
                  "-replication", "1"], timeout=120)

    def cached():
        blocks = cluster.block_locations(part)
        return blocks if blocks and all(b["cachedHosts"] for b in blocks) else None

    blocks = wait_for(cached, 120, f"a cached replica of {part} in WebHDFS cachedHosts")
    for b in blocks:
        assert set(b["cachedHosts"]) <= set(b["hosts"])  # cached on a DataNode that holds the block
        assert set(b["cachedHosts"]) <= {"worker1", "worker2", "worker3", "worker4"}
    _, stats = cluster.exec(["hdfs", "cacheadmin", "-listDirectives", "-stats"], timeout=120)
    assert part in stats


def test_engine_killed_mid_job_falls_back_then_recovers(cluster):
    before = cluster.rm_jmx()
    result: dict = {}

    def job():
        try:
            result["output"] = wordcount(cluster, "/tests/kill-engine/out")
        except Exception as e:  # reported by the assertion below
            result["error"] = e

    t = threading.Thread(target=job)
    t.start()
    # kill the engine as soon as the job's ApplicationMaster runs: its map and reduce asks are still to come
    wait_for(lambda: [a for a in cluster.running_apps() if a["state"] == "RUNNING"], 300, "the job to start")
    cluster.kill_engine()
    t.join(timeout=900)
    assert not t.is_alive(), "the job did not finish within 900 s after the engine was killed"
    assert "error" not in result, f"the job failed without its engine: {result.get('error')}"
    during = cluster.rm_jmx()
    assert during["Fallbacks"] > before["Fallbacks"]
    assert during["FallbacksUnavailable"] + during["FallbacksBreakerOpen"] + during["FallbacksTimeout"] \
        > before["FallbacksUnavailable"] + before["FallbacksBreakerOpen"] + before["FallbacksTimeout"]
    assert during["NativeContainers"] > before["NativeContainers"]

    # the engine comes back (same address): the plugin probes it again and the breaker closes
    cluster.start_engine(cluster.spec.policy)
    decisions = during["EngineDecisions"]
    small_wordcount(cluster, "/tests/kill-engine/again")
    after = cluster.rm_jmx()
    assert after["BreakerState"] == "CLOSED"
    assert after["EngineDecisions"] > decisions


def test_resourcemanager_restart_recovers(cluster):
    cluster.get("rm").restart(timeout=60)
    wait_for(lambda: len(cluster.running_nodemanagers()) == 4 if _answers(cluster) else False, 300,
             "all four NodeManagers to register with the restarted ResourceManager", interval=2)
    assert cluster.rm_jmx()["EngineAddress"] == "engine:50051"
    output = small_wordcount(cluster, "/tests/rm-restart/out")
    assert "completed successfully" in output
    assert cluster.rm_jmx()["EngineDecisions"] > 0  # counters restart with the RM; the new one asks the engine


def _answers(cluster) -> bool:
    try:
        cluster.running_nodemanagers()
        return True
    except OSError:
        return False
