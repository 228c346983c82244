"""A real Hadoop 3.5.0 cluster in containers with RlScheduler and the policy engine (docker_cluster/cluster.py).

The tests share one cluster (conftest.py; the engine behind the fault proxy) and run in file order: the destructive
ones (benchmarks/cluster_faults.py's cases: engine killed, paused, slowed, answering invalid schedules, its network
path cut; then the RM restarted) come last.
"""

from __future__ import annotations

import os
import sys
import urllib.request
from pathlib import Path

import pytest

from policy_engine.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]

from docker_cluster import cluster as docker_cluster  # noqa: E402  (docker_cluster/cluster.py, on sys.path through conftest.py)
import cluster_faults  # noqa: E402  (benchmarks/cluster_faults.py)
import hibench  # noqa: E402  (benchmarks/hibench.py)

WORDCOUNT_INPUT, _ = hibench.paths("wordcount")


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


def test_cluster_boots_with_four_hosts_in_two_racks(cluster):
    assert cluster.live_datanodes() == ["worker1", "worker2", "worker3", "worker4"]
    assert cluster.running_nodemanagers() == {"worker1": "/rack1", "worker2": "/rack1",
                                              "worker3": "/rack2", "worker4": "/rack2"}
    jmx = cluster.rm_jmx()
    assert jmx["EngineAddress"] == "faultproxy:50051"  # the engine, through the fault proxy
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


def test_rm_scheduler_page_and_rest_endpoint_answer_with_the_engine_state(cluster):
    # issue 23: RlScheduler's Scheduler page was HTTP 500 and /ws/v1/cluster/scheduler 404 ("Unknown scheduler
    # configured"); the container cluster sets yarn.http.rmwebapp.scheduler.page.class and
    # yarn.webapp.custom.webservice.class as the deploy snippet does
    def get(path: str) -> tuple[int, str]:
        with urllib.request.urlopen(f"{cluster.rm_url}{path}", timeout=30) as r:  # noqa: S310 (loopback)
            return r.status, r.read().decode()

    status, page = get("/cluster/scheduler")
    assert status == 200 and "yarn-rl engine" in page and "breakerState" in page, page[:2000]
    assert "Queue &#39;default&#39;" in page or "Queue 'default'" in page, page[:2000]
    status, rest = get("/ws/v1/cluster/scheduler")
    assert status == 200 and "fifoScheduler" in rest and '"numNodes":4' in rest, rest
    status, state = get("/ws/v1/cluster/scheduler/yarnrl")
    assert status == 200, state
    import json

    engine = json.loads(state)["yarnrl"]
    assert engine["scheduler"] == "RlScheduler" and engine["resourceCalculator"] == "DefaultResourceCalculator"
    assert engine["engineAddress"] == "faultproxy:50051" and engine["breakerState"] in ("CLOSED", "HALF_OPEN", "OPEN")
    assert set(engine["fallbacks"]) >= {"timeout", "invalidAnswer", "waitHeartbeats", "waitTime"}


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

    blocks = wait_until(cached, 120, f"a cached replica of {part} in WebHDFS cachedHosts")
    for b in blocks:
        assert set(b["cachedHosts"]) <= set(b["hosts"])  # cached on a DataNode that holds the block
        assert set(b["cachedHosts"]) <= {"worker1", "worker2", "worker3", "worker4"}
    _, stats = cluster.exec(["hdfs", "cacheadmin", "-listDirectives", "-stats"], timeout=120)
    assert part in stats


def test_a_throttled_worker_reads_a_cached_replica_from_memory_and_an_uncached_one_from_its_disk(cluster):
    """The disk read throttle (docker_cluster --worker-disk-read-mbps; here set on the running worker1 through its
    blkio cgroup, `throttle`) charges a read of an uncached replica and not one of a replica in the DataNode's
    centralized cache: both files live on worker1 only, each read starts with the block files out of the page cache
    (the shared cluster's DataNodes do not drop behind reads), and the kernel's own blkio counter says what came
    from the disk. Timed only against the rate's lower bound, which only the throttle can cause, and each other."""
    if os.geteuid() != 0:
        pytest.skip("throttling a running worker's disk needs root (its blkio cgroup)")
    size, rate_mbps = 2 * 1024 * 1024, 1.0
    base, pool = "/tests/disk-reads", "yarnrl-test-disk"
    cluster.exec(f"head -c {size} /dev/urandom > /tmp/a && head -c {size} /dev/urandom > /tmp/b && "
                 f"hdfs dfs -mkdir -p {base} && hdfs dfs -D dfs.replication=1 -put -f /tmp/a /tmp/b {base}/ && "
                 f"rm -f /tmp/a /tmp/b", role="worker1", timeout=300)  # a writer on a DataNode keeps the only replica
    cached, uncached = f"{base}/a", f"{base}/b"
    assert [b["hosts"] for p in (cached, uncached) for b in cluster.block_locations(p)] == [["worker1"], ["worker1"]]
    read = ("curl -s -f -L -o /dev/null -w '%{{size_download}} %{{time_total}}' "
            "'http://nn:9870/webhdfs/v1{}?op=OPEN&user.name=root'")
    try:
        cluster.exec(["hdfs", "cacheadmin", "-addPool", pool], timeout=120)
        cluster.exec(["hdfs", "cacheadmin", "-addDirective", "-path", cached, "-pool", pool], timeout=120)
        wait_until(lambda: all(b["cachedHosts"] == ["worker1"] for b in cluster.block_locations(cached)), 120,
                   f"{cached} cached on worker1")
        before = cluster.worker_disk_read_limits()
        limits = cluster.throttle_disk_reads(rate_mbps, hosts=["worker1"])
        assert list(limits["worker1"].values()) == [int(rate_mbps * 1024 * 1024)], limits
        assert {h: limits[h] for h in ("worker2", "worker3", "worker4")} == {
            h: before[h] for h in ("worker2", "worker3", "worker4")}, (before, limits)  # the others as they were
        took = {}
        for path in (uncached, cached, uncached, cached):
            cluster.drop_block_page_cache()
            before = cluster.disk_read_bytes("worker1")
            _, out = cluster.exec(read.format(path), role="worker1", timeout=300)
            disk = cluster.disk_read_bytes("worker1") - before
            got, seconds = int(out.split()[0]), float(out.split()[1])
            assert got == size
            took.setdefault(path, []).append((seconds, disk))
        print(f"disk reads at {rate_mbps} MB/s (seconds, bytes from the disk): {took}")
        for seconds, disk in took[uncached]:
            assert disk >= size, took  # the whole block from the disk
            assert seconds >= 0.8 * size / (rate_mbps * 1024 * 1024), took  # no faster than the throttle allows
        for seconds, disk in took[cached]:
            assert disk < size / 4, took  # the block from memory (its checksums may come from the disk)
        assert max(s for s, _ in took[cached]) < min(s for s, _ in took[uncached]), took
    finally:
        cleared = cluster.throttle_disk_reads(None, hosts=["worker1"])
        cluster.exec(["hdfs", "cacheadmin", "-removePool", pool], timeout=120, check=False)
        cluster.exec(["hdfs", "dfs", "-rm", "-r", "-f", "-skipTrash", base], timeout=120, check=False)
    assert cleared["worker1"] == {}, cleared


def _fault_case(cluster, case: str, unhealthy: bool = True) -> dict:
    """One case of benchmarks/cluster_faults.py on the shared cluster: a WordCount (one map, one reduce) runs; once
    its ApplicationMaster runs the fault starts and lasts until the plugin counted the fallback the fault causes
    and (kill, pause, netcut) its health check found the engine UNREACHABLE, and at least 5 s; then the engine is
    restored. Every wait is bounded and polled (a loaded CI machine)."""
    cluster_faults.ensure_input(cluster, WORDCOUNT_INPUT)
    r = cluster_faults.run_case(cluster, case, job="small", inp=WORDCOUNT_INPUT, hold_s=5.0, timeout_s=600,
                                out=f"/tests/fault-{case}")
    print(f"fault case {case}: {r}")  # the figures, in the test log
    # the job succeeds without its engine, and no node was ever allocated beyond its resources
    assert r["job"]["succeeded"], r["job"]
    assert r["probe"] is None or r["probe"]["succeeded"], r["probe"]
    assert r["over_allocated"] == [] and r["node_samples"] > 0
    # the plugin fell back during the fault: counted, and those heartbeats scheduled natively
    assert r["fallback_s"] is not None and r["fallbacks_during_fault"] > 0, r
    assert r["native_containers"] > 0, r
    # the engine takes scheduling back once it is restored: the plugin applies its answers again (counted on the
    # RM's JMX and by the engine itself), health SERVING and the breaker closed
    assert (r["unhealthy_s"] is not None) if unhealthy else True, r
    assert r["serving_s"] is not None and r["engine_s"] is not None, r
    assert r["engine_decisions_after_recovery"] > 0, r
    assert cluster.rm_jmx()["BreakerState"] == "CLOSED"
    return r


def test_engine_killed_mid_job_falls_back_then_recovers(cluster):
    r = _fault_case(cluster, "kill")
    # a killed engine: its connections reset, then its address is gone (refused, or unanswered until the deadline)
    assert r["fallbacks"]["unavailable"] + r["fallbacks"]["timeout"] + r["fallbacks"]["breaker_open"] > 0, r
    assert r["fallbacks"]["invalid_answer"] == 0


def test_engine_paused_mid_job_times_out_then_recovers(cluster):
    r = _fault_case(cluster, "pause")
    # a paused engine (cgroup freezer) keeps its connections open and answers nothing: the calls hit the deadline
    assert r["fallbacks"]["timeout"] > 0, r
    assert r["fallbacks"]["invalid_answer"] == 0
    # the plugin's health check saw it: UNREACHABLE during the pause (two checks of 1 s), SERVING after it
    assert r["unhealthy_s"] is not None and r["unhealthy_s"] >= 1.0, r


def test_engine_slowed_beyond_the_deadline_times_out_then_recovers(cluster):
    r = _fault_case(cluster, "slow", unhealthy=False)
    # 200 ms each way through the proxy, 8x the 50 ms deadline: calls time out (then the breaker opens); no answer
    # arrives in time to be applied, and none is refused as invalid
    assert r["fallbacks"]["timeout"] > 0, r
    assert r["fallbacks"]["invalid_answer"] == 0


def test_engine_answering_invalid_schedules_is_refused_then_recovers(cluster):
    r = _fault_case(cluster, "invalid", unhealthy=False)
    # every answer of docker_cluster/invalid_engine.py breaks a rule: the plugin refused them (counted per reason), and
    # since no node was over-allocated, none was applied
    assert r["fallbacks"]["invalid_answer"] > 0, r


def test_engine_that_only_waits_cannot_starve_a_job(cluster):
    r = _fault_case(cluster, "waits", unhealthy=False)
    # every answer of docker_cluster/invalid_engine.py --kinds wait is valid and empty: the plugin schedules each ask natively
    # once it has waited its cap (issue 23), counted by reason; nothing is refused as invalid
    assert r["fallbacks"]["wait_heartbeats"] + r["fallbacks"]["wait_time"] > 0, r
    assert r["fallbacks"]["invalid_answer"] == 0
    assert r["fallbacks"]["timeout"] + r["fallbacks"]["unavailable"] == 0, r


def test_network_path_cut_falls_back_then_recovers(cluster):
    r = _fault_case(cluster, "netcut")
    # open connections reset, new ones reset on accept: calls fail as unavailable (or, once 3 failed, the breaker)
    assert r["fallbacks"]["unavailable"] + r["fallbacks"]["timeout"] + r["fallbacks"]["breaker_open"] > 0, r
    assert r["fallbacks"]["invalid_answer"] == 0


def test_resourcemanager_restart_recovers(cluster):
    cluster.get("rm").restart(timeout=60)
    wait_until(lambda: len(cluster.running_nodemanagers()) == 4 if _answers(cluster) else False, 300,
                              "all four NodeManagers to register with the restarted ResourceManager", interval_s=2)
    assert cluster.rm_jmx()["EngineAddress"] == "faultproxy:50051"
    output = small_wordcount(cluster, "/tests/rm-restart/out")
    assert "completed successfully" in output
    assert cluster.rm_jmx()["EngineDecisions"] > 0  # counters restart with the RM; the new one asks the engine


def _answers(cluster) -> bool:
    try:
        cluster.running_nodemanagers()
        return True
    except OSError:
        return False


def _egress_sent_bytes(cluster, host: str) -> int:
    """Bytes the worker's eth0 root qdisc has sent (`tc -s qdisc show`, in its network namespace)."""
    import re
    import subprocess

    c = cluster.get(host)
    c.reload()
    out = subprocess.run(["nsenter", "-t", str(c.attrs["State"]["Pid"]), "-n", "tc", "-s", "qdisc", "show", "dev",
                          "eth0"], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"Sent (\d+) bytes", out).group(1))


def test_shaped_worker_egress_charges_a_remote_block_read_and_not_a_local_one(cluster):
    """--worker-egress-mbit: a block read by another worker leaves the holder through its shaped eth0 (at no more
    than the rate), a read on the holder itself goes over lo and never touches eth0. Counted in tc's own byte
    counter, not timed against a bound (the machine is loaded), except the rate's lower bound, which only the
    shaping can cause."""
    if os.geteuid() != 0:
        pytest.skip("shaping the workers' egress needs root (nsenter + tc)")
    size, rate_mbit = 2 * 1024 * 1024, 8
    path = "/tests/shaped-block"
    cluster.exec(f"head -c {size} /dev/urandom > /tmp/blk && hdfs dfs -mkdir -p /tests && "
                 f"hdfs dfs -D dfs.replication=1 -put -f /tmp/blk {path}",
                 role="worker1", timeout=300)  # a writer on a DataNode keeps the only replica
    assert [b["hosts"] for b in cluster.block_locations(path)] == [["worker1"]]
    read = (f"curl -s -f -L -o /dev/null -w '%{{size_download}} %{{time_total}}' "
            f"'http://nn:9870/webhdfs/v1{path}?op=OPEN&user.name=root'")
    try:
        shown = cluster.shape_workers(rate_mbit)
        assert all(f"rate {rate_mbit}Mbit" in q for q in shown.values()), shown
        assert docker_cluster.Cluster.attach(cluster.spec.name).spec.worker_egress_mbit == rate_mbit
        before = _egress_sent_bytes(cluster, "worker1")
        _, out = cluster.exec(read, role="worker1", timeout=300)  # local
        local_sent = _egress_sent_bytes(cluster, "worker1") - before
        assert int(out.split()[0]) == size
        before = _egress_sent_bytes(cluster, "worker1")
        _, out = cluster.exec(read, role="worker3", timeout=300)  # remote, other rack
        remote_sent = _egress_sent_bytes(cluster, "worker1") - before
        got, seconds = int(out.split()[0]), float(out.split()[1])
        assert got == size
        assert remote_sent >= size > 20 * local_sent, (remote_sent, local_sent)
        assert seconds >= 0.8 * size * 8 / (rate_mbit * 1e6), seconds  # no faster than the token bucket allows
    finally:
        cleared = cluster.shape_workers(None)
        cluster.exec(["hdfs", "dfs", "-rm", "-f", "-skipTrash", path], timeout=120, check=False)
    assert not any("tbf" in q for q in cleared.values()), cleared
