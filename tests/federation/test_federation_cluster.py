"""A real YARN Federation routed by the learned Router policy (org.yarnrl.federation.RlRouterPolicy): where jobs
land, and what the Router does when the engine dies or answers nonsense. Run in file order on one federation."""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from docker_cluster.federation import Federation, ROUTER_JMX_BEAN  # noqa: F401
from policy_engine.waiting import WaitTimeout, wait_until

EXAMPLES_JAR = "/opt/hadoop/share/hadoop/mapreduce/yarnrl-sleep-job.jar"  # SleepJob (docker/router)
APP_ID = re.compile(r"Submitted application (application_\d+_\d+)")


def sleep_job(fed: Federation, tags: str = "yarnrl.category=regular", map_ms: int = 1000) -> str:
    """A 1-map sleep job through the Router; returns its application id once it has finished (it must succeed)."""
    rc, out = fed.exec(f"hadoop jar {EXAMPLES_JAR} -Dmapreduce.job.tags={tags} -m 1 -r 0 -mt {map_ms}",
                       timeout=400, check=False)
    m = APP_ID.search(out)
    assert rc == 0 and m, f"the job failed (exit {rc}):\n{out[-3000:]}"
    return m.group(1)


def start_sleep_job(fed: Federation, map_ms: int) -> subprocess.Popen:
    return subprocess.Popen(["docker", "exec", fed.spec.container("client"), "timeout", "400", "hadoop", "jar",
                             EXAMPLES_JAR, "-m", "1", "-r", "0", "-mt", str(map_ms)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_jmx(fed: Federation, cond, what: str, timeout: float = 120.0) -> dict:
    time.sleep(2)  # a replaced engine: let the Router's channel see the old connection go first
    def counters_once_cond_holds() -> dict | None:
        counters = fed.router_jmx()
        return counters if counters and cond(counters) else None

    try:
        return wait_until(counters_once_cond_holds, timeout, what, interval_s=1.0,
                          retry_on=(OSError, ValueError, KeyError), detail=fed.router_jmx)
    except WaitTimeout as e:
        pytest.fail(f"{e} (the Router policy's counters)")


def final_status(fed: Federation, app: str) -> str:
    from docker_cluster.cluster import _http_json

    for k in range(fed.spec.subclusters):
        try:
            return _http_json(f"{fed.rm_url_of(k)}/ws/v1/cluster/apps/{app}")["app"]["finalStatus"]
        except Exception:  # noqa: BLE001 - not on this RM
            continue
    return "NOT FOUND"


def test_federation_boots(federation):
    from docker_cluster.cluster import _http_json

    m = _http_json(f"{federation.router_url}/ws/v1/cluster/metrics", timeout=10)["clusterMetrics"]
    assert int(m["activeNodes"]) == 2
    assert int(m["totalMB"]) == 2048 + 4096
    for k, mem in enumerate((2048, 4096)):
        assert federation.running_nodemanagers_of(k) == {f"sc{k + 1}-worker1": f"/rack{k + 1}"}
        assert federation.subcluster_metrics()[f"SC{k + 1}"]["totalMB"] == mem
    # the Router builds its policy at the first client call; then the engine's protocol is checked
    federation.exec("yarn application -list >/dev/null 2>&1 || true", timeout=120, check=False)
    jmx = wait_jmx(federation, lambda j: j.get("HandshakeState") == "OK", "the Router policy's handshake")
    assert jmx["EngineAddress"] == "engine:50051"
    assert jmx["Decisions"] == 0


def test_a_job_runs_on_the_subcluster_the_engine_chose(federation):
    before = federation.router_jmx()
    metrics = federation.subcluster_metrics()
    # the built-in rule would pick SC2 (most available memory): landing on SC1 is the engine's doing
    assert metrics["SC2"]["availableMB"] > metrics["SC1"]["availableMB"]
    app = sleep_job(federation, tags="yarnrl.category=time-critical,yarnrl.deadline-ms=600000,yarnrl.executors=1")
    after = federation.router_jmx()
    assert after["EngineDecisions"] == before["EngineDecisions"] + 1
    assert after["FallbacksTotal"] == before["FallbacksTotal"]
    assert after["LastDecision"] == "SC1 (engine sf-p)"
    assert federation.app_subcluster(app) == "SC1"
    assert final_status(federation, app) == "SUCCEEDED"


def test_an_invalid_answer_is_never_followed(federation):
    federation.start_invalid_engine()
    before = wait_jmx(federation, lambda j: j.get("HandshakeState") == "OK", "the handshake with the invalid engine")
    apps = [sleep_job(federation) for _ in range(2)]
    after = federation.router_jmx()
    invalid = after["FallbacksInvalidAnswer"] - before["FallbacksInvalidAnswer"]
    # a reconnect the Router had not noticed yet may cost the first job one "unavailable"; never an engine decision
    unavailable = after["FallbacksUnavailable"] - before["FallbacksUnavailable"]
    assert invalid >= 1 and invalid + unavailable == 2, after
    assert after["EngineDecisions"] == before["EngineDecisions"]
    for app in apps:
        assert federation.app_subcluster(app) == "SC2"   # the built-in rule: most available memory
        assert final_status(federation, app) == "SUCCEEDED"
    federation.restart_engine("sf-p")
    wait_jmx(federation, lambda j: j.get("HandshakeState") == "OK", "the handshake with the engine again")


def test_engine_killed_mid_stream_the_builtin_rule_routes_and_every_job_succeeds(federation):
    before = federation.router_jmx()
    first = start_sleep_job(federation, 20000)
    wait_until(lambda: federation.router_jmx()["Decisions"] != before["Decisions"], 300,
               "the Router's first decision of the stream", retry_on=(OSError, ValueError, KeyError))
    federation.kill_engine()
    try:
        rest = [start_sleep_job(federation, 2000) for _ in range(2)]
        outs = []
        for p in [first, *rest]:
            out, _ = p.communicate(timeout=420)
            assert p.returncode == 0, f"a job failed after the engine was killed:\n{out[-3000:]}"
            outs.append(APP_ID.search(out).group(1))
        after = federation.router_jmx()
        assert after["Decisions"] == before["Decisions"] + 3
        assert after["EngineDecisions"] == before["EngineDecisions"] + 1
        lost = sum(after[k] - before[k] for k in ("FallbacksUnavailable", "FallbacksTimeout",
                                                  "FallbacksBreakerOpen"))
        assert lost == 2, after
        assert all(final_status(federation, a) == "SUCCEEDED" for a in outs)
    finally:
        # the engine back, also when this test failed: the module's later tests need it
        federation.restart_engine("sf-p")
    wait_jmx(federation, lambda j: j.get("HandshakeState") == "OK", "the handshake after the engine's restart")
    again = federation.router_jmx()
    app = sleep_job(federation)
    assert federation.router_jmx()["EngineDecisions"] == again["EngineDecisions"] + 1
    assert final_status(federation, app) == "SUCCEEDED"


def test_a_setting_that_makes_no_sense_stops_the_router_naming_the_key(federation):
    from docker_cluster.cluster import ClusterError

    with pytest.raises(ClusterError) as e:
        federation.restart_router(["yarnrl.federation.engine.deadline-ms=0"], timeout=120)
    text = str(e.value)
    assert "exited" in text
    assert "yarnrl.federation.engine.deadline-ms" in text
    assert federation.get("router").attrs["State"]["ExitCode"] == 2
