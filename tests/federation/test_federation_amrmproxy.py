"""DSRAP across sub-clusters on a real YARN Federation: every NodeManager runs the AMRMProxy (Hadoop's
FederationInterceptor) with the yarn-rl AMRMProxy policy (org.yarnrl.federation.RlAMRMProxyPolicy), which asks a real
`policy-engine serve --policy sdl` how to split each ApplicationMaster's asks. A job with more maps than its home
sub-cluster has room for runs partly on the neighbour (an unmanaged AM there, seen on that RM's REST API); with the
engine gone every ask stays home, counted, and the job still succeeds.

Its own federation (module scope; this file sorts before test_federation_cluster.py, so it is up and gone before
the session's federation boots), removed at the module's end, also on failure."""

from __future__ import annotations

import re
import subprocess
import time
import uuid

import pytest

from docker_cluster import cluster as docker_cluster
from docker_cluster import images
from docker_cluster.cluster import _http_json
from docker_cluster.federation import Federation, FederationSpec
from policy_engine.metrics_scrape import Metrics
from policy_engine.waiting import wait_until

SLEEP_JAR = "/opt/hadoop/share/hadoop/mapreduce/yarnrl-sleep-job.jar"  # SleepJob (docker/router)
APP_ID = re.compile(r"Submitted application (application_\d+_\d+)")
HOME, NEIGHBOUR = "SC1", "SC2"
HOME_WORKER = "sc1-worker1"


DIAGNOSTIC = re.compile(r"FederationInterceptor|UnmanagedA|UAM|AMRMProxy|yarn-rl|Exception|ERROR|refus", re.I)


@pytest.fixture(scope="module")
def amrm_federation(docker_engine, request):
    """SC1 with 4096 MB and 4 vcores, SC2 with 2048 MB: the Router's built-in rule (the engine is off for routing:
    the one engine serves DSRAP's sdl) sends every job to SC1, the sub-cluster with the most available memory. An
    ApplicationMaster there leaves 3 vcores of headroom, so of 6 one-vcore maps DSRAP keeps what fits and forwards
    the rest to SC2."""
    images.ensure_federation_images()
    spec = FederationSpec(
        name=f"yarnrl-amrmtest-{uuid.uuid4().hex[:6]}", sc_memory_mb=[4096, 2048], policy="sdl",
        router_settings=["yarnrl.federation.engine.enabled=false"], amrmproxy=True,
        amrmproxy_deadline_ms=2500,  # 2 shared cores: a cold NodeManager JVM loads gRPC at its first AM; not timed
        task_jvm_opts=docker_cluster.SHORT_LIVED_JVM_FLAGS)
    fed = Federation(spec)
    failed0 = request.session.testsfailed
    try:
        fed.up(timeout=600, build=False)
        yield fed
    finally:
        if request.session.testsfailed > failed0:  # what the AMRMProxy and the RMs said, before they are removed
            for role in ("sc1-worker1", "sc2-worker1", "rm1", "rm2"):
                try:
                    lines = [x for x in fed.logs(role, 3000).splitlines() if DIAGNOSTIC.search(x)]
                    print(f"--- {role} ({len(lines)} lines of interest, the last 40)\n" + "\n".join(lines[-40:]))
                except Exception as e:  # noqa: BLE001 - diagnostics only
                    print(f"--- {role}: no logs ({e})")
        fed.down(quiet=True)
        left = [c.name for c in fed.containers()] + [
            n.name for n in docker_engine.networks.list(names=[spec.network])]
        assert not left, f"left behind after the AMRMProxy tests: {left}"


def start_job(fed: Federation, maps: int, map_ms: int) -> subprocess.Popen:
    return subprocess.Popen(["docker", "exec", fed.spec.container("client"), "timeout", "400", "hadoop", "jar",
                             SLEEP_JAR, "-m", str(maps), "-r", "0", "-mt", str(map_ms)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(p: subprocess.Popen) -> str:
    out, _ = p.communicate(timeout=450)
    m = APP_ID.search(out)
    assert p.returncode == 0 and m, f"the job failed (exit {p.returncode}):\n{out[-4000:]}"
    return m.group(1)


def route_decisions(fed: Federation) -> float:
    return Metrics.scrape(fed.dsrap_metrics_url, timeout=5).total("yarnrl_decisions_total", rpc="route")


def test_dsrap_puts_what_the_home_subcluster_has_no_room_for_on_the_neighbour(amrm_federation):
    fed = amrm_federation
    metrics = fed.subcluster_metrics()
    assert metrics[HOME]["availableMB"] > metrics[NEIGHBOUR]["availableMB"]  # the built-in rule picks SC1
    nm0 = fed.nm_jmx(HOME_WORKER)
    decisions0 = route_decisions(fed)
    job = start_job(fed, maps=6, map_ms=20000)
    # while the maps run: the neighbour's RM runs containers for an application it did not start (the unmanaged AM)
    seen_running: dict[str, int] = {}

    def neighbour_runs_containers():
        for k, sc in enumerate(fed.spec.sc_ids()):
            apps = (_http_json(f"{fed.rm_url_of(k)}/ws/v1/cluster/apps?states=RUNNING").get("apps") or {}).get(
                "app") or []
            for a in apps:
                seen_running[f"{sc}:{a['id']}"] = max(seen_running.get(f"{sc}:{a['id']}", 0),
                                                      int(a.get("runningContainers", 0)))
                if sc == NEIGHBOUR and a.get("unmanagedApplication") and int(a.get("runningContainers", 0)) > 0:
                    return a
        if job.poll() is not None:
            raise AssertionError("the job ended before any container ran on the neighbour sub-cluster")
        return None

    uam = wait_until(neighbour_runs_containers, 240, "containers of the job on the neighbour sub-cluster",
                     interval_s=1.0, retry_on=(OSError, ValueError, KeyError))
    app = finish(job)
    assert uam["id"] == app
    assert uam["name"].startswith("UnmanagedAM")
    # the job's home is SC1 (its ApplicationMaster's sub-cluster); SC2 ran its share under an unmanaged AM
    assert fed.app_subcluster(app) == HOME
    on = wait_until(lambda: (lambda a: a if a.get(NEIGHBOUR, {}).get("state") == "FINISHED" else None)(
        fed.app_on_subclusters(app)), 120, "the unmanaged AM on SC2 to finish", interval_s=1.0,
        retry_on=(OSError, ValueError, KeyError))
    assert set(on) == {HOME, NEIGHBOUR}
    assert not on[HOME]["unmanagedApplication"] and on[NEIGHBOUR]["unmanagedApplication"]
    assert on[HOME]["finalStatus"] == "SUCCEEDED" and on[NEIGHBOUR]["finalStatus"] == "SUCCEEDED"
    assert int(on[NEIGHBOUR]["memorySeconds"]) > 0  # containers (no AM container: it is unmanaged) held memory there
    # the AMRMProxy policy on the AM's NodeManager asked the engine and forwarded part of the 6 maps' ask
    nm = fed.nm_jmx(HOME_WORKER)
    assert nm["EngineAddress"] == "engine:50051" and nm["HandshakeState"] == "OK", nm
    assert nm["EngineCalls"] - nm0.get("EngineCalls", 0) >= 1, nm
    assert nm["FallbacksTotal"] - nm0.get("FallbacksTotal", 0) == 0, nm
    split = dict(kv.split("=") for kv in nm["LastSplit"].split())
    assert sum(int(v) for v in split.values()) == 6 and int(split.get(NEIGHBOUR, 0)) >= 1, nm
    forwarded = nm["ContainersForwarded"] - nm0.get("ContainersForwarded", 0)
    allocated_there = nm["ContainersAllocatedNeighbours"] - nm0.get("ContainersAllocatedNeighbours", 0)
    assert forwarded >= 1 and allocated_there >= 1, nm
    assert route_decisions(fed) - decisions0 >= 1   # the engine's own count of DSRAP decisions
    print(f"split {nm['LastSplit']}; containers allocated on {NEIGHBOUR}: {allocated_there}; "
          f"most running there at once: {max(v for k, v in seen_running.items() if k.startswith(NEIGHBOUR))}")


def test_with_the_engine_gone_every_ask_stays_home_and_the_job_succeeds(amrm_federation):
    fed = amrm_federation
    fed.kill_dsrap_engine()
    nm0 = fed.nm_jmx(HOME_WORKER)
    assert nm0, "no AMRMProxy policy counters on the home NodeManager (the first test ran no job there)"
    t0 = time.monotonic()
    app = finish(start_job(fed, maps=6, map_ms=2000))
    assert fed.app_subcluster(app) == HOME
    on = fed.app_on_subclusters(app)
    assert set(on) == {HOME}, f"a share went to {sorted(set(on) - {HOME})} without the engine"
    assert on[HOME]["finalStatus"] == "SUCCEEDED"
    nm = fed.nm_jmx(HOME_WORKER)
    lost = sum(nm[k] - nm0.get(k, 0) for k in ("FallbacksUnavailable", "FallbacksTimeout", "FallbacksBreakerOpen"))
    assert lost >= 1, nm
    assert nm["ContainersForwarded"] == nm0["ContainersForwarded"], nm
    assert nm["ContainersAllocatedNeighbours"] == nm0["ContainersAllocatedNeighbours"], nm
    print(f"without the engine: {lost} asks home by fallback, job took {time.monotonic() - t0:.0f} s")
