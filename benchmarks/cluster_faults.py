"""Fault injection on the container cluster: the engine killed, paused, slowed, made to answer invalid schedules,
and its network path cut, then restored, mid-job.

A real Hadoop 3.5.0 cluster in containers (docker_cluster/cluster.py: NameNode, ResourceManager with RlScheduler, 4 workers in
2 racks, the policy engine, a client) with a TCP fault proxy in front of the engine (`up --fault-proxy`:
docker_cluster/fault_proxy.py, host `faultproxy`; the RM's yarnrl.engine.address is faultproxy:50051). For each case a
WordCount runs through RlScheduler; once its ApplicationMaster runs (its map and reduce asks still to come) the
fault starts, and lasts until the plugin has counted the fallback the fault must cause, its health check has found
the engine UNREACHABLE (kill, pause, netcut: the faults an engine health check can see), and at least --hold-s;
then the engine is restored and the job runs on.

    none     no fault: the reference job time
    kill     `docker kill` of the engine container (SIGKILL: its connections reset, its address stops answering),
             then `docker start` of the same container (same address, same policy and settings)
    pause    `docker pause` (the cgroup freezer: sockets stay open, nothing answers, every Schedule call runs into
             the plugin's deadline), then `docker unpause`
    slow     the proxy delays every chunk by --slow-ms in each direction (default 200: a round trip of 400 ms, 8x
             the plugin's 50 ms deadline; health checks, 1 s timeout, still pass), then the delay goes to 0
    invalid  the proxy re-points to docker_cluster/invalid_engine.py (in its container): SERVING, right protocol version,
             every Schedule answer invalid (over-allocating, unknown ask, wrong request id, zero count, in turn);
             the plugin must refuse each (FallbacksInvalidAnswer); then back to the engine
    waits    the proxy re-points to docker_cluster/invalid_engine.py --kinds wait (same container): every answer valid and
             empty, an engine that only waits (issue 23); the plugin schedules each ask natively once it has waited
             its cap (FallbacksWaitHeartbeats / FallbacksWaitTime); then back to the engine
    netcut   the proxy cuts the path: open connections reset, new ones reset on accept (a firewall reject), then
             restores it. Cut at the proxy rather than with `docker network disconnect` of the engine: a
             disconnect blackholes the RM's open connection, and how soon it comes back after the reconnect is set
             by the kernel's TCP retransmission backoff (seconds to tens of seconds, growing with the cut's
             length), not by the plugin; the proxy's cut is the same every run

Measured per case from the ResourceManager's RlScheduler JMX bean (and its REST API for the nodes), polled every
--poll-s:

    fallback_s      fault -> first fallback counted (includes the wait for the next heartbeat with asks)
    unhealthy_s     fault -> the plugin's health check marks the engine UNREACHABLE (2 failed checks, 1 s apart)
    serving_s       recovery -> health SERVING again
    engine_s        recovery -> first engine answer applied again (EngineDecisions rises; a heartbeat with asks)
    last_native_s   recovery -> the last fallback counted before that first engine answer (0: none)
    job_s           the job's run time (ResourceManager's start/finish) and whether it succeeded
    fallbacks       per reason (timeout, unavailable, error, invalid_answer, breaker_open, wait_heartbeats,
                    wait_time) over the case
    over_allocated  nodes ever allocated beyond their resources (must be none): available memory negative in
                    any sample, or available vcores negative in a case where nothing was scheduled natively
    vcores_overcommitted  nodes whose available vcores went negative. YARN's own FIFO scheduler (the native
                    fallback, upstream code) counts memory only (DefaultResourceCalculator), so a node of 4096 MB /
                    4 vcores takes 8 containers of 512 MB / 1 vcore natively; the plugin's re-validation also
                    checks vcores and refuses any answer on a node whose vcores are used up. Reported, not a fault
                    of the plugin, when the case placed containers natively

When the job finishes before the engine decided again (a fault held past its last ask), a small probe job runs to
show the engine takes scheduling back. tests/cluster/test_docker_cluster.py runs every fault case under
`make test` on a small job; this script runs the cases --repeats times and writes a JSON file, a Markdown table
and a PNG (job time per case, recovery time); the last stdout line is one JSON object. Without a running cluster
of --name it starts one (with the fault proxy and the delay policy) and removes it at the end.

    .venv/bin/python -m docker_cluster up --name faults --policy delay --fault-proxy
    .venv/bin/python benchmarks/cluster_faults.py --name faults --cases none,kill,pause,slow,invalid,netcut \\
        --repeats 3 --job hibench
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from policy_engine.waiting import retry, wait_until

ROOT = Path(__file__).resolve().parent.parent

CASES = ("none", "kill", "pause", "slow", "invalid", "waits", "netcut")
PROXY_CASES = ("slow", "invalid", "waits", "netcut")  # need the fault proxy in front of the engine
UNHEALTHY = ("kill", "pause", "netcut")  # the plugin's health check must see these (slow and invalid answer it)
REASONS = {"timeout": "FallbacksTimeout", "unavailable": "FallbacksUnavailable", "error": "FallbacksError",
           "invalid_answer": "FallbacksInvalidAnswer", "breaker_open": "FallbacksBreakerOpen",
           "wait_heartbeats": "FallbacksWaitHeartbeats", "wait_time": "FallbacksWaitTime"}
# the fallback counters a fault must raise before it is lifted: a killed engine's calls fail (connection reset,
# then refused or unanswered while its address is gone), a paused engine's calls run into the deadline
# a slowed engine's calls run into the deadline; an invalid answer is refused; a cut path resets and refuses
EXPECTED = {"kill": ("FallbacksUnavailable", "FallbacksTimeout", "FallbacksBreakerOpen"),
            "pause": ("FallbacksTimeout",),
            "slow": ("FallbacksTimeout",),
            "invalid": ("FallbacksInvalidAnswer",),
            "waits": ("FallbacksWaitHeartbeats", "FallbacksWaitTime"),
            "netcut": ("FallbacksUnavailable", "FallbacksTimeout", "FallbacksBreakerOpen")}
SLOW_MS = 200
COUNTERS = ("Fallbacks", "EngineDecisions", "EngineContainers", "NativeContainers", "NativeHeartbeats",
            *REASONS.values())
RESULTS = ROOT / "benchmarks" / "results" / "reliability"


# ------------------------------------------------------------------------------------------- sampling
@dataclass
class Sample:
    t: float  # time.monotonic()
    jmx: dict  # the RlScheduler bean's counters and states
    over_allocated: list[str] = field(default_factory=list)  # nodes with negative available memory
    vcores_over: list[str] = field(default_factory=list)  # nodes with negative available vcores


def over_allocated(nodes: list[dict]) -> list[str]:
    """Nodes of the RM's /ws/v1/cluster/nodes answer that have more memory allocated than they have."""
    return [n.get("nodeHostName", "?") for n in nodes if n.get("availMemoryMB", 0) < 0]


def vcores_overcommitted(nodes: list[dict]) -> list[str]:
    """Nodes of the same answer with more vcores allocated than they have (YARN's FIFO counts memory only)."""
    return [n.get("nodeHostName", "?") for n in nodes if n.get("availableVirtualCores", 0) < 0]


class JmxPoller:
    """Polls the RlScheduler bean and the RM's node list in a thread; a failed poll (the RM busy) is skipped."""

    def __init__(self, cluster, interval_s: float = 0.5):
        self.cluster = cluster
        self.interval_s = interval_s
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="jmx-poller", daemon=True)

    def start(self) -> "JmxPoller":
        self._thread.start()
        return self

    def _run(self) -> None:
        from docker_cluster.cluster import RM_JMX_BEAN, _http_json

        rm = self.cluster.rm_url  # once: the property asks Docker for the published port
        while not self._stop.is_set():
            try:
                jmx = _http_json(f"{rm}/jmx?qry={RM_JMX_BEAN}")["beans"][0]
                nodes = (_http_json(f"{rm}/ws/v1/cluster/nodes").get("nodes") or {}).get("node")
                s = Sample(time.monotonic(), {k: jmx.get(k) for k in (*COUNTERS, "BreakerState", "EngineHealth")},
                           over_allocated(nodes or []), vcores_overcommitted(nodes or []))
                with self._lock:
                    self.samples.append(s)
            except Exception:  # noqa: BLE001 (a slow or restarting RM: the next poll tries again)
                pass
            self._stop.wait(self.interval_s)

    def snapshot(self) -> list[Sample]:
        with self._lock:
            return list(self.samples)

    def stop(self) -> list[Sample]:
        self._stop.set()
        self._thread.join(timeout=30)
        return self.snapshot()


def healthy(health: str | None) -> bool:
    """EngineHealth reads `engine:50051=SERVING` (one `address=STATE` per engine); the active engine is the first."""
    return bool(health) and health.split(",")[0].rsplit("=", 1)[-1] == "SERVING"


def _first(samples: list[Sample], since: float, pred) -> float | None:
    for s in samples:
        if s.t >= since and pred(s):
            return s.t
    return None


def summarize(samples: list[Sample], t_fault: float, t_recover: float, before: dict, at_recovery: dict,
              after: dict) -> dict:
    """The case's figures from the JMX samples (see the module docstring); pure, so it is unit-tested."""

    def since(t: float | None, t0: float) -> float | None:
        return None if t is None else round(t - t0, 2)

    t_fb = _first(samples, t_fault, lambda s: (s.jmx.get("Fallbacks") or 0) > before["Fallbacks"])
    t_unhealthy = _first(samples, t_fault, lambda s: not healthy(s.jmx.get("EngineHealth")))
    t_serving = _first(samples, t_recover, lambda s: healthy(s.jmx.get("EngineHealth")))
    t_engine = _first(samples, t_recover,
                      lambda s: (s.jmx.get("EngineDecisions") or 0) > at_recovery["EngineDecisions"])
    t_closed = _first(samples, t_recover, lambda s: s.jmx.get("BreakerState") == "CLOSED")
    # the last fallback before the engine's first answer after the recovery: a sample whose count rose
    last_native, prev = None, at_recovery["Fallbacks"]
    for s in samples:
        if s.t < t_recover or (t_engine is not None and s.t > t_engine):
            continue
        f = s.jmx.get("Fallbacks") or 0
        if f > prev:
            last_native, prev = s.t, f
    engine_back = next((s for s in samples if t_engine is not None and s.t >= t_engine), None)
    return {
        "fault_s": round(t_recover - t_fault, 2),
        # the count read at recovery proves the fallback came before it; the sampler may show it one poll later
        # (a case that ends as soon as its fallback is counted), so that first sample is the time's upper bound
        "fallback_s": since(t_fb, t_fault) if t_fb is not None and (
            t_fb <= t_recover or at_recovery["Fallbacks"] > before["Fallbacks"]) else None,
        "unhealthy_s": since(t_unhealthy, t_fault) if t_unhealthy is not None and t_unhealthy <= t_recover else None,
        "serving_s": since(t_serving, t_recover),
        "breaker_closed_s": since(t_closed, t_recover),
        "engine_s": since(t_engine, t_recover),
        "last_native_s": since(last_native, t_recover) if last_native is not None else 0.0,
        "fallbacks": {name: after[key] - before[key] for name, key in REASONS.items()},
        "fallbacks_during_fault": at_recovery["Fallbacks"] - before["Fallbacks"],
        "fallbacks_after_engine_back": (after["Fallbacks"] - engine_back.jmx["Fallbacks"]) if engine_back else None,
        "native_containers": after["NativeContainers"] - before["NativeContainers"],
        "engine_containers": after["EngineContainers"] - before["EngineContainers"],
        "engine_decisions": after["EngineDecisions"] - before["EngineDecisions"],
        # memory beyond a node's: nobody may; vcores beyond: only YARN's memory-only FIFO, so only with natives
        "over_allocated": sorted({h for s in samples for h in s.over_allocated}
                                 | ({h for s in samples for h in s.vcores_over}
                                    if after["NativeContainers"] == before["NativeContainers"] else set())),
        "vcores_overcommitted": sorted({h for s in samples for h in s.vcores_over}),
        "node_samples": len(samples),
        "breaker_state_after": after.get("BreakerState"),
    }


# ------------------------------------------------------------------------------------------- jobs
def job_command(job: str, inp: str, out: str, jar: str) -> list[str]:
    """`small`: WordCount over one file of the input, one reduce (two task containers); `hibench`: HiBench's
    WordCount (8 maps, 8 reduces) over the whole input. Tagged with the input for the engine's block lookups."""
    import hibench

    if job == "hibench":
        return hibench.run_command("wordcount", inp, out, jar)
    part = f"{inp}/part-m-00000"
    return ["hadoop", "jar", jar, "wordcount", "-D", f"mapreduce.job.tags=yarnrl.input={part}", "-D",
            "mapreduce.job.reduces=1", part, out]


def app_seconds(cluster, output: str) -> float | None:
    """The job's run time as the ResourceManager saw it (its start to its finish), from the client's output."""
    from docker_cluster.cluster import _http_json

    m = re.search(r"Running job: job_(\d+_\d+)", output)
    if not m:
        return None
    try:
        app = _http_json(f"{cluster.rm_url}/ws/v1/cluster/apps/application_{m.group(1)}")["app"]
    except Exception:  # noqa: BLE001
        return None
    if not app.get("finishedTime"):
        return None
    return (app["finishedTime"] - app["startedTime"]) / 1000.0


class Job:
    """One `hadoop jar` run in the client container, in a thread."""

    def __init__(self, cluster, cmd: list[str], out: str, timeout_s: float):
        self.cluster, self.out, self.result = cluster, out, {}
        cluster.exec(["hdfs", "dfs", "-rm", "-r", "-f", "-skipTrash", out], timeout=120)
        self.t0 = time.monotonic()

        def run():
            try:
                rc, output = cluster.exec(cmd, timeout=timeout_s, check=False)
                self.result.update(rc=rc, output=output)
            except Exception as e:  # noqa: BLE001 (reported as a failed job)
                self.result.update(rc=-1, output=f"{type(e).__name__}: {e}")
            self.result["wall_s"] = time.monotonic() - self.t0

        self.thread = threading.Thread(target=run, name=f"job-{out}", daemon=True)
        self.thread.start()

    def done(self) -> bool:
        return not self.thread.is_alive()

    def wait(self, timeout_s: float) -> dict:
        self.thread.join(timeout=timeout_s)
        if self.thread.is_alive():
            return {"succeeded": False, "error": f"still running after {timeout_s:.0f} s", "job_s": None}
        out = self.result.get("output", "")
        ok = self.result.get("rc") == 0 and "completed successfully" in out
        if ok:
            rc, _ = self.cluster.exec(["hdfs", "dfs", "-test", "-e", f"{self.out}/_SUCCESS"], timeout=120,
                                      check=False)
            ok = rc == 0
        from hibench import counter

        res = {"succeeded": ok, "job_s": app_seconds(self.cluster, out) or round(self.result["wall_s"], 1),
               "client_s": round(self.result["wall_s"], 1),
               "maps": counter(out, "Launched map tasks"), "reduces": counter(out, "Launched reduce tasks")}
        if not ok:
            res["error"] = "\n".join(out.splitlines()[-15:])
        return res




def ensure_input(cluster, inp: str) -> None:
    """HiBench's WordCount tiny input (RandomTextWriter, 8 files), generated when missing."""
    import hibench
    from docker_cluster.cluster import EXAMPLES_JAR

    rc, _ = cluster.exec(["hdfs", "dfs", "-test", "-e", f"{inp}/part-m-00000"], timeout=120, check=False)
    if rc != 0:
        cluster.exec(["hdfs", "dfs", "-rm", "-r", "-f", "-skipTrash", inp], timeout=120)
        cluster.exec(hibench.prepare_command("wordcount", hibench.PROFILES["wordcount"]["tiny"], inp, EXAMPLES_JAR),
                     timeout=900)


# ------------------------------------------------------------------------------------------- faults
def _proxy(cluster, command: str) -> dict:
    from docker_cluster import fault_proxy

    return fault_proxy.send(cluster.proxy_control, command)


def inject(cluster, case: str, slow_ms: float = SLOW_MS) -> None:
    from docker_cluster.cluster import INVALID_ENGINE_PORT, WAITING_ENGINE_PORT

    if case == "kill":
        cluster.get("engine").kill()
    elif case == "pause":
        cluster.get("engine").pause()
    elif case == "slow":
        _proxy(cluster, f"delay {slow_ms:g}")
    elif case == "invalid":
        _proxy(cluster, f"upstream 127.0.0.1:{INVALID_ENGINE_PORT}")  # the invalid engine, in the proxy's container
    elif case == "waits":
        _proxy(cluster, f"upstream 127.0.0.1:{WAITING_ENGINE_PORT}")  # an engine that only waits, same container
    elif case == "netcut":
        _proxy(cluster, "cut")


def recover(cluster, case: str, timeout_s: float) -> None:
    from docker_cluster.cluster import ENGINE_GRPC_PORT

    if case == "kill":
        cluster.get("engine").start()  # same container: same address, policy and settings
    elif case == "pause":
        cluster.get("engine").unpause()
    elif case == "slow":
        _proxy(cluster, "delay 0")
    elif case in ("invalid", "waits"):
        _proxy(cluster, f"upstream engine:{ENGINE_GRPC_PORT}")
    elif case == "netcut":
        _proxy(cluster, "restore")
    if case != "none":
        wait_until(lambda: _serving(cluster), timeout_s, "the engine's metrics endpoint after its recovery")


def _serving(cluster) -> bool:
    try:
        cluster.engine_metric("yarnrl_decisions_total")
        return True
    except OSError:
        return False


def run_case(cluster, case: str, job: str = "small", inp: str = "/hibench/wordcount/input", hold_s: float = 5.0,
             timeout_s: float = 600.0, poll_s: float = 0.5, out: str | None = None, say=lambda m: None,
             slow_ms: float = SLOW_MS) -> dict:
    """One case (see the module docstring): the figures of `summarize`, the job's result and, when it ran, the
    probe job's."""
    from docker_cluster.cluster import EXAMPLES_JAR

    if case not in CASES:
        raise ValueError(f"unknown case {case!r}; known: {', '.join(CASES)}")
    if case in PROXY_CASES:
        cluster.proxy_control  # noqa: B018 (a cluster without the proxy fails here, saying how to start one)
    out = out or f"/faults/{case}-{int(time.time())}"
    poller = JmxPoller(cluster, poll_s).start()
    try:
        before = retry(cluster.rm_jmx, timeout_s, "the RM's JMX")
        running_before = {a["id"] for a in retry(cluster.running_apps, timeout_s, "the RM's application list")}
        say(f"{case}: {job} WordCount submitted")
        j = Job(cluster, job_command(job, inp, f"{out}/job", EXAMPLES_JAR), f"{out}/job", timeout_s)
        # the fault lands once the job's ApplicationMaster runs: its map and reduce asks are still to come
        wait_until(lambda: j.done() or [a for a in cluster.running_apps() if a["id"] not in running_before],
                   timeout_s, "the job's ApplicationMaster to run")
        before = retry(cluster.rm_jmx, timeout_s, "the RM's JMX")
        t_fault = time.monotonic()
        inject(cluster, case, slow_ms)
        if case != "none":
            say(f"{case}: fault on; waiting for the plugin to count {' or '.join(EXPECTED[case])}")
            expected = EXPECTED[case]
            try:
                wait_until(lambda: any(cluster.rm_jmx()[k] > before[k] for k in expected) or j.done(),
                           timeout_s, f"{case}: a fallback counted in {expected}")
                # and until the plugin's health check has seen the engine down (in the samples, so the figure is
                # measured, however slow the RM's monitor thread is on a loaded machine)
                if case in UNHEALTHY:
                    wait_until(lambda: any(s.t >= t_fault and not healthy(s.jmx.get("EngineHealth"))
                                           for s in poller.snapshot()),
                               timeout_s, f"{case}: the plugin's health check to find the engine UNREACHABLE")
                left = hold_s - (time.monotonic() - t_fault)
                if left > 0:
                    time.sleep(left)
            finally:
                t_recover = time.monotonic()
                recover(cluster, case, timeout_s)
            say(f"{case}: engine restored after {t_recover - t_fault:.1f} s")
        else:
            t_recover = t_fault
        at_recovery = retry(cluster.rm_jmx, timeout_s, "the RM's JMX")
        engine_at_recovery = retry(lambda: cluster.engine_metric("yarnrl_decisions_total"), timeout_s,
                                   "the engine's metrics")
        # back to the engine: its next answer applied; if the job has no ask left, a probe job brings one
        wait_until(lambda: cluster.rm_jmx()["EngineDecisions"] > at_recovery["EngineDecisions"] or j.done(),
                   timeout_s, f"{case}: the engine to decide again or the job to end")
        result_job = j.wait(timeout_s)
        probe = None
        if retry(cluster.rm_jmx, timeout_s, "the RM's JMX")["EngineDecisions"] \
                <= at_recovery["EngineDecisions"]:
            say(f"{case}: the job ended without an ask after the recovery; probe job")
            p = Job(cluster, job_command("small", inp, f"{out}/probe", EXAMPLES_JAR), f"{out}/probe", timeout_s)
            wait_until(lambda: cluster.rm_jmx()["EngineDecisions"] > at_recovery["EngineDecisions"] or p.done(),
                       timeout_s, f"{case}: the engine to decide for the probe job")
            probe = p.wait(timeout_s)
        time.sleep(2 * poll_s)  # the last counters into the samples
        after = retry(cluster.rm_jmx, timeout_s, "the RM's JMX")
        engine_after = retry(lambda: cluster.engine_metric("yarnrl_decisions_total"), timeout_s,
                             "the engine's metrics")
    finally:
        samples = poller.stop()
    res = {"case": case, "job_kind": job, **summarize(samples, t_fault, t_recover, before, at_recovery, after),
           "job": result_job, "probe": probe,
           "engine_decisions_after_recovery": engine_after - engine_at_recovery}
    cluster.exec(["hdfs", "dfs", "-rm", "-r", "-f", "-skipTrash", out], timeout=120, check=False)
    return res


# ------------------------------------------------------------------------------------------- report
def mean_std(values: list[float | None]) -> dict:
    v = [float(x) for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))]
    if not v:
        return {"mean": None, "std": None, "n": 0}
    m = sum(v) / len(v)
    return {"mean": round(m, 2), "std": round(math.sqrt(sum((x - m) ** 2 for x in v) / len(v)), 2), "n": len(v)}


def aggregate(runs: list[dict]) -> dict:
    """Per case: mean/std of the figures, job time against the fault-free runs, fallbacks per reason (sums)."""
    out: dict = {}
    for case in [c for c in CASES if any(r["case"] == c for r in runs)]:
        rs = [r for r in runs if r["case"] == case]
        out[case] = {
            "runs": len(rs),
            "all_succeeded": all(r["job"]["succeeded"] and (r["probe"] is None or r["probe"]["succeeded"])
                                 for r in rs),
            **{k: mean_std([r[k] for r in rs]) for k in ("fault_s", "fallback_s", "unhealthy_s", "serving_s",
                                                         "engine_s", "last_native_s")},
            "job_s": mean_std([r["job"]["job_s"] for r in rs]),
            "fallbacks": {name: sum(r["fallbacks"][name] for r in rs) for name in REASONS},
            "native_containers": sum(r["native_containers"] for r in rs),
            "engine_containers": sum(r["engine_containers"] for r in rs),
            "over_allocated": sorted({h for r in rs for h in r["over_allocated"]}),
            "vcores_overcommitted_runs": sum(1 for r in rs if r.get("vcores_overcommitted")),
            "node_samples": sum(r.get("node_samples", 0) for r in rs),
            "probe_jobs": sum(1 for r in rs if r["probe"] is not None),
        }
    ref = (out.get("none") or {}).get("job_s", {}).get("mean")
    for agg in out.values():
        m = agg["job_s"]["mean"]
        agg["job_vs_fault_free"] = round(m / ref, 2) if ref and m else None
    return out


def markdown(agg: dict, load: tuple[float, float]) -> str:
    def ms(d: dict, digits: int = 1) -> str:
        if d["mean"] is None:
            return "-"
        return f"{d['mean']:.{digits}f} ± {d['std']:.{digits}f}"

    rows = [f"(load average {load[0]:.1f} at the start, {load[1]:.1f} at the end; 2 cores)", "",
            "| case | runs | job s | vs fault-free | fault held s | fault -> fallback s | fault -> UNREACHABLE s "
            "| recovery -> SERVING s | recovery -> engine decides s | last native after recovery s "
            "| fallbacks by reason | native / engine containers | over-allocated nodes (polls) "
            "| runs with vcores overcommitted (native FIFO) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for case, a in agg.items():
        reasons = ", ".join(f"{k} {v}" for k, v in a["fallbacks"].items() if v) or "none"
        rows.append(f"| {case} | {a['runs']} | {ms(a['job_s'])} | {a['job_vs_fault_free'] or '-'} "
                    f"| {ms(a['fault_s'])} | {ms(a['fallback_s'])} | {ms(a['unhealthy_s'])} | {ms(a['serving_s'])} "
                    f"| {ms(a['engine_s'])} | {ms(a['last_native_s'])} | {reasons} "
                    f"| {a['native_containers']} / {a['engine_containers']} "
                    f"| {len(a['over_allocated'])} ({a['node_samples']}) | {a['vcores_overcommitted_runs']} |")
    return "\n".join(rows)


def plot(agg: dict, path: Path, title: str) -> None:
    """Job time per case (mean ± std, the fault-free mean as a line) and recovery -> engine decides again."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = list(agg)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    job = [agg[c]["job_s"] for c in cases]
    a1.bar(cases, [j["mean"] or 0 for j in job], yerr=[j["std"] or 0 for j in job], capsize=4,
           color=["tab:gray" if c == "none" else "tab:blue" for c in cases])
    ref = (agg.get("none") or {}).get("job_s", {}).get("mean")
    if ref:
        a1.axhline(ref, color="tab:gray", ls="--", lw=1, label="fault-free mean")
        a1.legend(loc="lower right")
    a1.set_ylabel("job time, s (RM start to finish)")
    a1.set_title("job time under each fault")
    faulted = [c for c in cases if c != "none"]
    back = [agg[c]["engine_s"] for c in faulted]
    a2.bar(faulted, [b["mean"] or 0 for b in back], yerr=[b["std"] or 0 for b in back], capsize=4, color="tab:green")
    a2.axhline(15, color="tab:red", ls="--", lw=1, label="target: 15 s")
    a2.set_ylabel("s")
    a2.set_title("recovery -> first engine answer applied")
    a2.legend(loc="upper right")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--name", default="yarnrl", help="the running container cluster (make cluster-up; default "
                                                     "%(default)s); started, and removed at the end, when absent")
    ap.add_argument("--policy", help="restart the engine with this policy first (default: keep the running one; a "
                                      "started cluster runs delay)")
    ap.add_argument("--cases", default=",".join(CASES),
                    help=f"comma-separated, of {','.join(CASES)} (default all; {','.join(PROXY_CASES)} need a cluster "
                         f"started with --fault-proxy)")
    ap.add_argument("--repeats", type=int, default=2, help="runs of every case (default %(default)s)")
    ap.add_argument("--job", choices=("small", "hibench"), default="small",
                    help="small: WordCount over one input file with 1 reduce; hibench: HiBench WordCount tiny, "
                         "8 maps and 8 reduces (default %(default)s)")
    ap.add_argument("--hold-s", type=float, default=5.0,
                    help="least seconds a fault lasts (it lasts until its fallback is counted; default %(default)s)")
    ap.add_argument("--timeout-s", type=float, default=600.0, help="bound on every wait and job (default %(default)s)")
    ap.add_argument("--poll-s", type=float, default=0.5, help="JMX polling interval (default %(default)s)")
    ap.add_argument("--slow-ms", type=float, default=SLOW_MS,
                    help="slow case: delay per chunk and direction, ms (default %(default)s; the deadline is 50)")
    ap.add_argument("--out", type=Path, default=RESULTS / "cluster-faults.json", help="JSON results file")
    args = ap.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    if not cases or any(c not in CASES for c in cases):
        ap.error(f"--cases: choose from {', '.join(CASES)}")
    if args.repeats < 1 or args.hold_s < 0 or args.timeout_s <= 0 or args.poll_s <= 0:
        ap.error("--repeats must be >= 1, --hold-s >= 0, --timeout-s and --poll-s > 0")
    if not 0 < args.slow_ms <= 600_000:
        ap.error("--slow-ms must be in (0, 600000]")
    if args.policy:
        from policy_engine.policy import UnknownPolicy, spec

        try:
            if "schedule" not in spec(args.policy).capabilities:
                ap.error(f"--policy: {args.policy} does not schedule node heartbeats (a routing policy)")
        except UnknownPolicy as e:
            ap.error(f"--policy: {e}")

    from docker_cluster import cluster as docker_cluster
    from docker_cluster import images

    def say(msg: str) -> None:
        print(f"[faults] {msg}", file=sys.stderr, flush=True)

    started = False
    try:
        try:
            cl = docker_cluster.Cluster.attach(args.name)
        except docker_cluster.ClusterError:
            say(f"starting the container cluster {args.name!r} (minutes)")
            cl = docker_cluster.Cluster(docker_cluster.ClusterSpec(name=args.name, policy="delay", fault_proxy=True,
                                                                   breaker_open_ms=3000)).up(timeout=900,
                                                                                             progress=say)
            started = True
        if not cl.spec.engine:
            ap.error(f"cluster {args.name!r} runs without an engine")
        if not cl.spec.fault_proxy and set(cases) & set(PROXY_CASES):
            ap.error(f"--cases {','.join(c for c in cases if c in PROXY_CASES)}: cluster {args.name!r} has no fault "
                     f"proxy in front of its engine; start it with `docker_cluster/cluster.py up --fault-proxy`")
        if args.policy and args.policy != cl.spec.policy:
            say(f"engine -> {args.policy}")
            cl.start_engine(args.policy)
        load0 = os.getloadavg()[0]
        ensure_input(cl, "/hibench/wordcount/input")
        runs = []
        try:
            from tqdm import tqdm

            bar = tqdm(total=len(cases) * args.repeats, desc="fault cases", unit="case", file=sys.stderr)
        except ImportError:
            bar = None
        for rep in range(args.repeats):
            for case in (cases[rep % len(cases):] + cases[:rep % len(cases)]):  # order rotated per repeat
                r = run_case(cl, case, job=args.job, hold_s=args.hold_s, timeout_s=args.timeout_s,
                             poll_s=args.poll_s, say=say, slow_ms=args.slow_ms)
                r["load_average"] = round(os.getloadavg()[0], 1)
                runs.append(r)
                say(f"{case}: job {r['job']['job_s']} s ok={r['job']['succeeded']}, fallback {r['fallback_s']} s, "
                    f"engine back {r['engine_s']} s, fallbacks {r['fallbacks']}")
                args.out.parent.mkdir(parents=True, exist_ok=True)  # the runs so far, should a later one hang
                args.out.with_suffix(".partial.json").write_text(json.dumps({"runs": runs}, indent=1))
                if bar is not None:
                    bar.update(1)
        if bar is not None:
            bar.close()
        load1 = os.getloadavg()[0]
    except (images.DockerUnavailable, docker_cluster.ClusterError, TimeoutError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        if started:
            cl.down(quiet=True)
    agg = aggregate(runs)
    table = markdown(agg, (load0, load1))
    result = {"cluster": "docker", "job": args.job, "repeats": args.repeats, "hold_s": args.hold_s,
              "slow_ms": args.slow_ms, "fault_proxy": cl.spec.fault_proxy, "policy": cl.spec.policy,
              "deadline_ms": cl.spec.engine_deadline_ms, "breaker_open_ms": cl.spec.breaker_open_ms,
              "load_average": [load0, load1], "cases": agg, "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    args.out.with_suffix(".partial.json").unlink(missing_ok=True)
    png = args.out.with_suffix(".png")
    plot(agg, png, f"{args.job} WordCount, {args.repeats} run(s) per case, load average {load0:.0f}-{load1:.0f}")
    args.out.with_suffix(".md").write_text(table + "\n")
    print(table)
    print(f"wrote {args.out}, {png} and {args.out.with_suffix('.md')}")
    print(json.dumps({"cluster": "docker", "out": str(args.out), "load_average": [load0, load1],
                      "cases": {c: {k: a[k] for k in ("runs", "all_succeeded", "job_s", "job_vs_fault_free",
                                                      "fallback_s", "engine_s", "fallbacks", "over_allocated")}
                                for c, a in agg.items()}}))
    return 0 if all(a["all_succeeded"] and not a["over_allocated"] for a in agg.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
