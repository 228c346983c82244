#!/usr/bin/env python3
"""RL-FC's job stream routed by each policy in turn on a real YARN Federation, beside the emulator's prediction.

    make federation-up        # docker_cluster/cluster.py up --federation 2 --sc-ids SC5,SC3 --sc-memory 4096,2048
    .venv/bin/python benchmarks/federation.py --policies random,sf-e,maf,rl-fc,rl-lsfc --pattern uniform --jobs 40

The stream is the emulator's own: `generate(jobs, RL-FC's PATTERN, RL-FC's job profile, 5 clusters, seed)`
(emulator/multicluster/workload.py), so the emulator's prediction is for exactly these jobs. Each emulated job
becomes one real MapReduce sleep job, submitted through the Router at its arrival time:
  * (arrival step - the first job's) * --arrival-seconds (default 1.5 s per step): the stream starts at once;
  * maps = the job's mean executor request / --executors-per-map (default 120), 1..3 maps;
  * map time = one execution's run time in steps * --task-seconds (default 0.25 s per step); a streaming job
    runs one batch (its first execution);
  * tags: yarnrl.category, yarnrl.deadline-ms (time-critical and streaming: the job's optimal real run time *
    its emulated deadline / run time ratio), yarnrl.expected-runtime-ms, yarnrl.executors;
  * the client, ApplicationMaster and map JVMs run with --jvm-opts (default C1 only and the serial collector):
    each job starts 2-5 short-lived JVMs, and on 2 cores their JIT and GC threads are most of the CPU a stream uses.
The job's optimal real run time OR = map time + the overhead of one job alone (measured first: a 1-map job of
1 s on the idle federation). From the RMs' start and finish times (each job looked up on the RM that ran it):
AR, deadline misses (AR > deadline), TMDL = their total, AJDR = mean 100 * (AR / OR - 1), AJER = mean
100 * AR / OR (no heterogeneity here, so SR = OR), misses per category, utilisation per sub-cluster (allocated /
total memory sampled every 2 s), and the Router policy's counters (engine decisions, fallbacks per reason, p99
decision time).

The emulator's prediction: the same workload in the emulator's federation of the model the policy was trained on
(RL-FC's 5 clusters for random, sf-e, maf and rl-fc; RL-LSFC's 5 heterogeneous clusters for rl-lsfc), one episode.
The real federation has 2 sub-clusters; the Router maps them onto the model's cluster slots by their ids
(SC5 -> slot 5, SC3 -> slot 3; `yarnrl.federation.cluster-shape`) and sends the other slots as full padding, so a
model sees the shape it was trained on, and an answer naming a padding slot is never followed (counted).

A table may be completed over several invocations: `--resume` reuses an earlier invocation's finished policies
and its measured per-job overhead only when a sha256 fingerprint of the job stream (the real jobs with their maps,
map times and deadlines), the federation's shape and the settings that shape a run (arrival and task scales, JVM
options, the Router's load reading) is the same, the recorded jobs are the ones those settings make, and the
emulator predicts what it predicted then; otherwise it refuses in one line. `--rotate K` changes which of the
remaining policies runs first.

Writes benchmarks/results/federation/federation-<pattern>-<jobs>.{json,md,png}; one JSON object is the last line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
from pathlib import Path

import numpy as np

from policy_engine.waiting import wait_until

REPO = Path(__file__).resolve().parent.parent

RESULTS = REPO / "benchmarks" / "results" / "federation"
EXAMPLES_JAR = "/opt/hadoop/share/hadoop/mapreduce/yarnrl-sleep-job.jar"  # SleepJob (docker/router)
CATEGORIES = {1: "regular", 2: "time-critical", 3: "streaming"}
MODELS = {"rl-fc": "rl-fc-{pattern}.safetensors", "rl-lsfc": "rl-lsfc-uniform.safetensors"}
# What the Router sends for each policy (docker/router/router-daemon writes these into its yarn-site.xml)
SHAPE_000 = "500,800,1200,1300,1900"                      # RL-FC's clusters (emulator/scenarios/multicluster.py)
SHAPE_002 = "800:70,1200:60,1500:100,1800:80,2300:90"    # RL-LSFC's (emulator/scenarios/hetero_elastic.py)


def router_settings(policy: str, args) -> list[str]:
    common = [f"yarnrl.federation.seconds-per-step={args.task_seconds}", "yarnrl.federation.executor-mb=512",
              "yarnrl.federation.history.interval-ms=1000"]
    if getattr(args, "load_max_age_ms", 0) > 0:
        common += [f"yarnrl.federation.load.max-age-ms={args.load_max_age_ms}"]
    if getattr(args, "router_cache_ttl", 0) > 0:
        # later properties win over router-daemon's TTL 0; the Guava cache needs no JCache provider
        common += [f"yarn.federation.cache-ttl.secs={args.router_cache_ttl}",
                   "yarn.federation.cache.class=org.apache.hadoop.yarn.server.federation.cache.FederationGuavaCache"]
    if policy == "rl-fc":
        return common + [f"yarnrl.federation.cluster-shape={SHAPE_000}",
                         f"yarnrl.federation.job-scale={args.executors_per_map}"]
    if policy == "rl-lsfc":
        return common + [f"yarnrl.federation.cluster-shape={SHAPE_002}",
                         f"yarnrl.federation.job-scale={args.executors_per_map}", "yarnrl.federation.history.length=105"]
    return common


# ---------------------------------------------------------------------------------------------- the stream
def workload(args):
    from emulator.multicluster.workload import generate
    from emulator.scenarios.multicluster import PATTERNS_000, PROFILE_000

    return generate(args.jobs, PATTERNS_000[args.pattern], PROFILE_000, 5, args.seed)


def real_jobs(w, args, overhead_s: float) -> list[dict]:
    jobs = []
    first = float(np.min(w.arrival)) if w.n_jobs else 0.0
    for j in range(w.n_jobs):
        cat = int(w.category[j])
        mean_exec = float(np.mean(w.base_distribution[j]))
        maps = int(min(3, max(1, round(mean_exec / args.executors_per_map))))
        run_steps = int(w.standard_runtime[j])
        map_s = max(1.0, run_steps * args.task_seconds)
        optimal = map_s + overhead_s
        deadline_ratio = float(w.deadline[j]) / max(1, run_steps) if w.deadline[j] > 0 else 0.0
        deadline_s = optimal * deadline_ratio if deadline_ratio > 0 else 0.0
        jobs.append({
            "index": j, "category": CATEGORIES.get(cat, "regular"), "arrival_s": (float(w.arrival[j]) - first) * args.arrival_seconds,
            "maps": maps, "map_s": map_s, "optimal_s": optimal, "deadline_s": deadline_s,
            "tags": ",".join([f"yarnrl.category={CATEGORIES.get(cat, 'regular')}",
                              f"yarnrl.executors={maps}", f"yarnrl.expected-runtime-ms={int(map_s * 1000)}"]
                             + ([f"yarnrl.deadline-ms={int(deadline_s * 1000)}"] if deadline_s > 0 else [])),
        })
    return jobs


# ---------------------------------------------------------------------------------------------- real runs
TASK_JVM = "-Xmx320m -Djava.net.preferIPv4Stack=true"  # docker/hadoop/conf/mapred-site.xml.in's, kept


def submit(fed, name: str, job: dict, log: Path, jvm_opts: str = "") -> subprocess.Popen:
    opts = f"{TASK_JVM} {jvm_opts}".strip()
    cmd = ["docker", "exec", "-e", f"HADOOP_CLIENT_OPTS={jvm_opts}", fed.spec.container("client"), "timeout", "900",
           "hadoop", "jar", EXAMPLES_JAR, f"-Dmapreduce.job.tags={job['tags']}", f"-Dmapreduce.job.name={name}",
           f"-Dyarn.app.mapreduce.am.command-opts={opts}", f"-Dmapreduce.map.java.opts={opts}",
           "-m", str(job["maps"]), "-r", "0", "-mt", str(int(job["map_s"] * 1000))]
    return subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT)


APP_ID = re.compile(r"Submitted application (application_\d+_\d+)")


def app_record(fed, app_id: str) -> dict | None:
    from docker_cluster.cluster import _http_json

    for k, sc in enumerate(fed.spec.sc_ids()):
        try:
            a = _http_json(f"{fed.rm_url_of(k)}/ws/v1/cluster/apps/{app_id}")["app"]
            return {"subcluster": sc, "started": a["startedTime"], "finished": a["finishedTime"],
                    "state": a["state"], "final_status": a["finalStatus"]}
        except urllib.error.HTTPError:
            continue
    return None


class UtilisationSampler(threading.Thread):
    def __init__(self, fed, interval: float = 2.0):
        super().__init__(daemon=True)
        self.fed, self.interval = fed, interval
        self.samples: dict[str, list[float]] = {sc: [] for sc in fed.spec.sc_ids()}
        self.stop_event = threading.Event()

    def run(self):
        while not self.stop_event.wait(self.interval):
            try:
                for sc, m in self.fed.subcluster_metrics().items():
                    if m.get("totalMB"):
                        self.samples[sc].append(m["allocatedMB"] / m["totalMB"])
            except Exception:  # noqa: BLE001 - a missed sample is not a reason to stop the run
                pass


def kill_unfinished(fed) -> int:
    """Kills every application still queued or running on the sub-clusters' RMs (REST, as user root); how many."""
    import urllib.request

    from docker_cluster.cluster import _http_json

    killed = 0
    for k in range(fed.spec.subclusters):
        apps = (_http_json(f"{fed.rm_url_of(k)}/ws/v1/cluster/apps").get("apps") or {}).get("app") or []
        for a in apps:
            if a["state"] in ("FINISHED", "FAILED", "KILLED"):
                continue
            req = urllib.request.Request(f"{fed.rm_url_of(k)}/ws/v1/cluster/apps/{a['id']}/state?user.name=root",
                                         data=b'{"state":"KILLED"}', method="PUT",
                                         headers={"Content-Type": "application/json"})
            try:
                urllib.request.urlopen(req, timeout=30).read()
                killed += 1
            except OSError as e:
                print(f"[federation] could not kill {a['id']}: {e}", file=sys.stderr)
    return killed


def containers_cpu_seconds(fed) -> float | None:
    """CPU seconds the federation's containers have used so far (Docker's counters; None where unreadable)."""
    try:
        total = 0
        for c in fed.containers():
            total += c.stats(stream=False, one_shot=True)["cpu_stats"]["cpu_usage"]["total_usage"]
        return total / 1e9
    except Exception:  # noqa: BLE001 - the CPU figure is context for the numbers, not a reason to stop the run
        return None


def run_one_job_alone(fed, tmp: Path, jvm_opts: str = "") -> float:
    """Elapsed minus map time of a 1-map, 1-second job on the idle federation: the per-job overhead."""
    p = submit(fed, "fed-calibration", {"tags": "yarnrl.category=regular", "maps": 1, "map_s": 1.0}, tmp / "calib.log",
               jvm_opts)
    p.wait(timeout=600)
    m = APP_ID.search((tmp / "calib.log").read_text())
    if not m:
        raise RuntimeError("the calibration job was not submitted:\n" + (tmp / "calib.log").read_text()[-2000:])
    rec = app_record(fed, m.group(1))
    return (rec["finished"] - rec["started"]) / 1000.0 - 1.0


def wait_router_policy(fed, timeout: float = 120.0) -> None:
    """Builds the Router's policy (its first client call does) and waits for the engine's protocol handshake."""
    fed.exec("yarn application -list -appStates FINISHED >/dev/null 2>&1 || true", timeout=120, check=False)
    wait_until(lambda: fed.router_jmx().get("HandshakeState") == "OK", timeout,
               "the Router policy's handshake with the engine", interval_s=1.0,
               retry_on=(OSError, ValueError, KeyError), detail=fed.router_jmx)


def run_policy(fed, policy: str, jobs: list[dict], args, tmp: Path) -> dict:
    from tqdm import tqdm

    fed.restart_router(router_settings(policy, args))
    model = MODELS.get(policy)
    fed.restart_engine(policy, model=model.format(pattern=args.pattern) if model else None)
    wait_router_policy(fed)
    sampler = UtilisationSampler(fed)
    sampler.start()
    procs = []
    cpu0, load0 = containers_cpu_seconds(fed), os.getloadavg()[0]
    t0 = time.monotonic()
    for job in tqdm(jobs, desc=f"federation {policy}", unit="job", file=sys.stderr):
        delay = job["arrival_s"] - (time.monotonic() - t0)
        if delay > 0:
            time.sleep(delay)
        log = tmp / f"{policy}-{job['index']}.log"
        procs.append((job, log, submit(fed, f"fed-{policy}-{job['index']}", job, log, args.jvm_opts)))
    for _, _, p in procs:  # one deadline for the whole stream (each client also stops itself after 900 s)
        try:
            p.wait(timeout=max(1.0, args.job_timeout - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            p.kill()
    wall = time.monotonic() - t0
    cpu1, load1 = containers_cpu_seconds(fed), os.getloadavg()[0]
    sampler.stop_event.set()
    sampler.join()
    jmx = fed.router_jmx()
    rows = []
    for job, log, p in procs:
        m = APP_ID.search(log.read_text(errors="replace"))
        rec = app_record(fed, m.group(1)) if m else None
        row = {**{k: job[k] for k in ("index", "category", "maps", "map_s", "optimal_s", "deadline_s")},
               "app": m.group(1) if m else None, "client_rc": p.returncode}
        if rec:
            row.update(rec)
            row["ar_s"] = (rec["finished"] - rec["started"]) / 1000.0 if rec["finished"] else None
        rows.append(row)
    out = summarise(policy, rows, sampler.samples, jmx, wall)
    # what did not finish would hold the next policy's memory: killed (it already counts as not succeeded)
    out["killed_after_stream"] = kill_unfinished(fed)
    # how busy the 2 cores were: the federation's own CPU use and the machine's load (other work included)
    out["cpu_s"] = round(cpu1 - cpu0, 1) if cpu0 is not None and cpu1 is not None else None
    out["load_average"] = [round(load0, 1), round(load1, 1)]
    return out


def summarise(policy: str, rows: list[dict], util: dict[str, list[float]], jmx: dict, wall: float) -> dict:
    done = [r for r in rows if r.get("ar_s") is not None and r.get("final_status") == "SUCCEEDED"]
    missed = [r for r in done if r["deadline_s"] > 0 and r["ar_s"] > r["deadline_s"]]
    failed = len(rows) - len(done)
    per_cat = {c: sum(1 for r in missed if r["category"] == c) for c in CATEGORIES.values()}
    ratios = [r["ar_s"] / r["optimal_s"] for r in done]
    placed = {}
    for r in rows:
        placed[r.get("subcluster") or "unknown"] = placed.get(r.get("subcluster") or "unknown", 0) + 1
    return {
        "policy": policy, "jobs": len(rows), "succeeded": len(done), "failed": failed,
        # a job that did not succeed counts as missing its deadline (it never met it)
        "tmdl": len(missed) + sum(1 for r in rows if r not in done and r["deadline_s"] > 0),
        "ajdr": float(np.mean([100 * (x - 1) for x in ratios])) if ratios else math.nan,
        "ajer": float(np.mean([100 * x for x in ratios])) if ratios else math.nan,
        "missed_per_category": per_cat, "jobs_per_subcluster": placed,
        "utilisation": {sc: (float(np.mean(v)) if v else None) for sc, v in util.items()},
        "router": {k: jmx.get(k) for k in ("Decisions", "EngineDecisions", "BuiltinDecisions", "FallbacksTotal",
                                           "FallbacksTimeout", "FallbacksUnavailable", "FallbacksError",
                                           "FallbacksInvalidAnswer", "FallbacksPaddingChosen",
                                           "FallbacksBreakerOpen", "LoadCopyReads", "DecisionMicrosP50", "DecisionMicrosP99",
                                           "DecisionMicrosMax", "StateStoreMicrosP50", "StateStoreMicrosP99",
                                           "EngineMicrosP50", "EngineMicrosP99")},
        "wall_s": round(wall, 1), "rows": rows,
    }


# ---------------------------------------------------------------------------------------------- emulator
def predict(policy: str, w, args) -> dict:
    from emulator.drivers import make_driver
    from emulator.multicluster.scenario import RLFCScenario, RLLSFCScenario
    from emulator.scenarios.hetero_elastic import FEDERATION_002, PATTERNS_002, PROFILE_002
    from emulator.scenarios.multicluster import CLUSTERS_000, PATTERNS_000, PROFILE_000
    from emulator.multicluster.sim import Federation

    if policy == "rl-lsfc":
        sc = RLLSFCScenario("federation-prediction", FEDERATION_002, PATTERNS_002[args.pattern], PROFILE_002, w.n_jobs)
        shape = "RL-LSFC's 5 clusters " + SHAPE_002
    else:
        sc = RLFCScenario("federation-prediction", Federation(CLUSTERS_000), PATTERNS_000[args.pattern], PROFILE_000,
                          w.n_jobs)
        shape = "RL-FC's 5 clusters " + SHAPE_000
    model = MODELS.get(policy)
    sim = sc.make_sim()
    with make_driver(policy, model=str(REPO / "models" / model.format(pattern=args.pattern)) if model else None) as d:
        obs = sim.reset(args.seed, w)
        while obs is not None:
            ev = sim.take_events()
            if ev:
                d.report(ev)
            obs = sim.step(d.route(obs))
    res = sim.result()
    cats = np.asarray(w.category)
    missed = np.asarray(res.missed_per_job)
    return {"tmdl": int(res.tmdl), "ajdr": res.ajdr(), "ajer": res.ajer(), "shape": shape,
            "missed_per_category": {name: int(missed[cats == c].sum()) for c, name in CATEGORIES.items()}}


def buffer_study(policies: list[str], args, episodes: int) -> dict:
    """The Router sees one submission at a time, so RL-FC and RL-LSFC choose from a one-job buffer there. Their
    emulated episodes with the global buffer as the papers have it, and with only its oldest job shown (what the
    Router gives them): TMDL and AJDR, mean over `episodes` seeds of the full-size scenario."""
    import dataclasses

    from emulator.drivers import make_driver
    from emulator.multicluster.scenario import RLFCScenario, RLLSFCScenario
    from emulator.multicluster.sim import Federation
    from emulator.scenarios.hetero_elastic import FEDERATION_002, PATTERNS_002, PROFILE_002
    from emulator.scenarios.multicluster import CLUSTERS_000, PATTERNS_000, PROFILE_000

    out = {}
    for policy in policies:
        if policy == "rl-lsfc":
            sc = RLLSFCScenario("buffer", FEDERATION_002, PATTERNS_002[args.pattern], PROFILE_002, 1000)
        else:
            sc = RLFCScenario("buffer", Federation(CLUSTERS_000), PATTERNS_000[args.pattern], PROFILE_000, 500)
        model = MODELS.get(policy)
        row = {}
        for mode in ("buffer", "one-job"):
            tmdl, ajdr = [], []
            with make_driver(policy, model=str(REPO / "models" / model.format(pattern=args.pattern))
                             if model else None) as d:
                for ep in range(episodes):
                    sim = sc.make_sim()
                    obs = sim.reset(args.seed + ep)
                    while obs is not None:
                        ev = sim.take_events()
                        if ev:
                            d.report(ev)
                        if mode == "one-job" and len(obs.jobs) > 1:
                            obs = dataclasses.replace(obs, jobs=obs.jobs[:1])
                        obs = sim.step(d.route(obs))
                    res = sim.result()
                    tmdl.append(res.tmdl)
                    ajdr.append(res.ajdr())
            row[mode] = {"tmdl": float(np.mean(tmdl)), "ajdr": float(np.mean(ajdr))}
        out[policy] = row
        print(f"[federation] buffer study {policy}: {row}", file=sys.stderr)
    return out


# ---------------------------------------------------------------------------------------------- resume
# The settings that shape what a policy's run measures (the job stream, its timing, the JVMs, the Router's cache).
# --name, --out, --policies and --rotate do not: a run of one policy does not depend on which others ran or when.
STREAM_SETTINGS = ("pattern", "jobs", "seed", "arrival_seconds", "task_seconds", "executors_per_map", "jvm_opts",
                   "job_timeout", "router_cache_ttl", "load_max_age_ms")
SETTING_DEFAULTS = {"router_cache_ttl": 0, "load_max_age_ms": 0}  # results written before the setting existed ran with the cache off


def fingerprint(settings: dict, overhead_s: float, federation: str) -> str:
    """sha256 over the real job stream (what real_jobs makes of the settings and the measured overhead), the
    federation's shape and the settings above: two runs with equal fingerprints ran the same jobs on the same
    shape in the same way, so their rows may share one table."""
    ns = argparse.Namespace(**{**SETTING_DEFAULTS, **settings})
    jobs = real_jobs(workload(ns), ns, overhead_s)
    blob = json.dumps({"jobs": jobs, "federation": federation,
                       "settings": {k: getattr(ns, k) for k in STREAM_SETTINGS}}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def resume_file(path: Path, args) -> Path:
    if path.is_dir():
        for name in (f"federation-{args.pattern}-{args.jobs}{output_suffix(args)}.partial.json",
                     f"federation-{args.pattern}-{args.jobs}{output_suffix(args)}.json"):
            if (path / name).exists():
                return path / name
        raise SystemExit(f"--resume: no federation-{args.pattern}-{args.jobs}{output_suffix(args)}[.partial].json "
                         f"in {path}")
    if not path.exists():
        raise SystemExit(f"--resume: {path} does not exist")
    return path


def load_resumable(path: Path, args, federation: str, predictions: dict) -> tuple[list[dict], float]:
    """The runs of an earlier invocation that this one may reuse, and the overhead it measured (reused too: the
    deadlines derive from it). Refuses, in one line, unless the earlier runs' recorded settings, overhead and
    federation give this invocation's fingerprint, their recorded jobs are the ones those settings make, and the
    emulator still predicts what it predicted then."""
    old = json.loads(path.read_text())
    settings, overhead = {**SETTING_DEFAULTS, **old["settings"]}, float(old["overhead_s"])
    old_fed = old.get("federation", "(not recorded)")
    mine = fingerprint(vars(args), overhead, federation)
    theirs = fingerprint(settings, overhead, old_fed)
    if mine != theirs:
        diff = [k for k in STREAM_SETTINGS if settings.get(k) != getattr(args, k)]
        why = f"settings differ: {diff}" if diff else (f"federation {old_fed} vs {federation}"
                                                        if old_fed != federation else "the job stream differs")
        raise SystemExit(f"--resume {path}: fingerprint {theirs[:12]} != this run's {mine[:12]} ({why}); not reused")
    ns = argparse.Namespace(**settings)
    want = {j["index"]: j for j in real_jobs(workload(ns), ns, overhead)}
    runs = []
    for r in old["runs"]:
        if r.get("fingerprint") not in (None, mine):
            raise SystemExit(f"--resume {path}: run {r['policy']} has fingerprint {r['fingerprint'][:12]}, "
                             f"not {mine[:12]}; not reused")
        for row in r["rows"]:
            j = want.get(row["index"])
            if j is None or any(abs(row[k] - j[k]) > 1e-6 for k in ("maps", "map_s", "optimal_s", "deadline_s")):
                raise SystemExit(f"--resume {path}: run {r['policy']}'s job {row['index']} is not the job these "
                                 "settings make now; not reused")
        pred = predictions.get(r["policy"])
        if pred is not None and (pred["tmdl"], round(pred["ajdr"], 6)) != (r["prediction"]["tmdl"],
                                                                           round(r["prediction"]["ajdr"], 6)):
            raise SystemExit(f"--resume {path}: the emulator now predicts TMDL {pred['tmdl']} for {r['policy']}, "
                             f"the earlier run recorded {r['prediction']['tmdl']}; not reused")
        runs.append({**r, "fingerprint": mine, "resumed_from": str(path)})
    return runs, overhead


def output_suffix(args) -> str:
    """Runs whose Router reads load another way than per decision from ZooKeeper get their own files."""
    out = f"-cache{args.router_cache_ttl:g}" if getattr(args, "router_cache_ttl", 0) > 0 else ""
    return out + (f"-loadcopy{args.load_max_age_ms:g}ms" if getattr(args, "load_max_age_ms", 0) > 0 else "")


# ---------------------------------------------------------------------------------------------- report
def rank(values: dict[str, float]) -> list[str]:
    return [p for p, _ in sorted(values.items(), key=lambda kv: (kv[1], kv[0]))]


def rank_text(values: dict[str, float]) -> str:
    """'a < b = c': the order, with ties shown as ties."""
    order = rank(values)
    out = order[:1]
    for prev, p in zip(order, order[1:]):
        out += ["=" if values[p] == values[prev] else "<", p]
    return " ".join(out)


def pair_agreement(real: dict[str, float], predicted: dict[str, float]) -> dict:
    """Of the policy pairs the emulator orders strictly, how many the real run orders the same way (a tie in the
    real run counts as not agreeing): a ranking of 5 noisy numbers is rarely preserved whole."""
    pols = sorted(predicted)
    ordered = agree = 0
    for i, a in enumerate(pols):
        for b in pols[i + 1:]:
            if predicted[a] == predicted[b]:
                continue
            ordered += 1
            agree += (predicted[a] < predicted[b]) == (real[a] < real[b]) and real[a] != real[b]
    return {"ordered_pairs": ordered, "agreeing": agree}


def write_report(result: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pols = [r["policy"] for r in result["runs"]]
    lines = [f"Real federation ({result['federation']}), {result['jobs']} jobs, pattern {result['pattern']}, "
             f"seed {result['seed']}; per-job overhead {result['overhead_s']:.1f} s. Emulator prediction in "
             "brackets (same jobs, the model's 5-cluster federation). CPU s: the federation's containers during the "
             "stream; load: the machine's 1-minute load average at its start and end.", "",
             "| policy | TMDL | AJDR % | AJER % | missed reg / tc / str | succeeded | jobs per sub-cluster | "
             "utilisation | engine decisions | fallbacks | decision ms p50 / p99 | wall s | CPU s | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["runs"]:
        p = r["prediction"]
        mc, pc = r["missed_per_category"], p["missed_per_category"]
        util = ", ".join(f"{k} {v:.2f}" for k, v in r["utilisation"].items() if v is not None)
        ro = r["router"]
        p50, p99 = ((ro.get(k) or 0) / 1000.0 for k in ("DecisionMicrosP50", "DecisionMicrosP99"))
        lines.append(f"| {r['policy']} | {r['tmdl']} ({p['tmdl']}) | {r['ajdr']:.1f} ({p['ajdr']:.1f}) | "
                     f"{r['ajer']:.1f} ({p['ajer']:.1f}) | {mc['regular']}/{mc['time-critical']}/{mc['streaming']} "
                     f"({pc['regular']}/{pc['time-critical']}/{pc['streaming']}) | {r['succeeded']}/{r['jobs']} | "
                     f"{r['jobs_per_subcluster']} | {util} | {ro.get('EngineDecisions')} | "
                     f"{ro.get('FallbacksTotal')} | {p50:.1f} / {p99:.1f} | {r['wall_s']:.0f} | {r.get('cpu_s')} | "
                     f"{'-'.join(str(x) for x in r.get('load_average', []))} |")
    pa = result["pair_agreement"]
    reused = sorted({r["resumed_from"] for r in result["runs"] if r.get("resumed_from")})
    if reused:
        lines += ["", f"Reused from an earlier invocation (`--resume`; same job stream, federation shape and settings: "
                      f"fingerprint {str(result.get('fingerprint'))[:12]}): "
                      + ", ".join(r["policy"] for r in result["runs"] if r.get("resumed_from"))
                      + f" (from {', '.join(Path(x).name for x in reused)}); the others ran in this invocation."]
    lines += ["", "TMDL counts a job with a deadline that did not succeed (killed at the stream's end) as missed; the "
                  "per-category columns count succeeded jobs that missed."]
    if result.get("policies_not_run"):
        lines += ["", f"Not run (the run was cut short): {', '.join(result['policies_not_run'])}."]
    real = rank_text({r["policy"]: r["tmdl"] for r in result["runs"]})
    pred = rank_text({r["policy"]: r["prediction"]["tmdl"] for r in result["runs"]})
    lines += ["", f"TMDL ranking, real: {real}; emulator: {pred} (preserved: {real == pred}; of the "
                  f"{pa['ordered_pairs']} policy pairs the emulator orders strictly, {pa['agreeing']} in the same "
                  "order)."]
    Path(str(out) + ".md").write_text("\n".join(lines) + "\n")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    x = np.arange(len(pols))
    for ax, key, label in ((axes[0], "tmdl", "TMDL (missed deadlines)"), (axes[1], "ajdr", "AJDR (%)")):
        ax.bar(x - 0.2, [r[key] for r in result["runs"]], 0.4, label="real federation")
        ax.bar(x + 0.2, [r["prediction"][key] for r in result["runs"]], 0.4, label="emulator prediction")
        ax.set_xticks(x, pols)
        ax.set_title(label)
    axes[0].legend()
    fig.suptitle(f"{result['jobs']} jobs, {result['pattern']} arrivals, 2 sub-clusters ({result['federation']})")
    fig.tight_layout()
    fig.savefig(str(out) + ".png", dpi=110)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", default="yarnrl-fed", help="the federation (`make federation-up`, default yarnrl-fed)")
    ap.add_argument("--policies", default="random,sf-e,maf,rl-fc,rl-lsfc")
    ap.add_argument("--pattern", default="uniform", choices=("uniform", "bernoulli", "beta"))
    ap.add_argument("--jobs", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--arrival-seconds", type=float, default=1.5,
                    help="real seconds per emulated arrival step (at 0.75, 6 jobs at once tripled each job's run time "
                         "on 2 shared cores)")
    ap.add_argument("--task-seconds", type=float, default=0.25, help="real seconds per emulated run-time step")
    ap.add_argument("--executors-per-map", type=float, default=120.0,
                    help="emulated executors per real map (the jobs' 50-350 executors -> 1-3 maps)")
    ap.add_argument("--jvm-opts", default="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
                    help="extra options of the client, ApplicationMaster and map JVMs ('' for the JVM's defaults)")
    ap.add_argument("--job-timeout", type=float, default=1200.0, help="seconds for a policy's whole stream")
    ap.add_argument("--predict-only", action="store_true", help="only the emulator's prediction (no federation)")
    ap.add_argument("--buffer-study", type=int, default=0, metavar="EPISODES",
                    help="only the emulator: each policy with the papers' global buffer vs the Router's one-job "
                         "buffer, mean TMDL / AJDR over EPISODES full-size episodes")
    ap.add_argument("--report-from", metavar="PARTIAL_JSON",
                    help="no run: the table, PNG and JSON from a cut-short run's .partial.json (its finished policies)")
    ap.add_argument("--router-cache-ttl", type=int, default=0, metavar="SECS",
                    help="the Router's state-store cache (yarn.federation.cache-ttl.secs; 0: every decision reads "
                         "ZooKeeper). The RMs heartbeat every 1 s, so 1 s adds at most ~1 s of staleness; results go "
                         "to federation-<pattern>-<jobs>-cache<SECS>.*")
    ap.add_argument("--load-max-age-ms", type=int, default=0, metavar="MS",
                    help="the Router policy's background load copy (yarnrl.federation.load.max-age-ms): a decision "
                         "uses a copy of the sub-clusters' load at most MS old, read every MS/2 in the background, "
                         "instead of reading ZooKeeper itself (0: read per decision); results go to "
                         "federation-<pattern>-<jobs>-loadcopy<MS>ms.*")
    ap.add_argument("--resume", metavar="PATH",
                    help="reuse the finished policies of an earlier invocation (its .json or .partial.json, or the "
                         "folder holding them) and its measured per-job overhead, and run only the others; refused "
                         "in one line unless the job stream, the federation's shape and the settings are identical "
                         "(a recorded sha256 fingerprint)")
    ap.add_argument("--rerun", default="", metavar="POLICIES",
                    help="with --resume: run these policies again even where the earlier invocation has them "
                         "(comma-separated; e.g. one that ran under a different machine load)")
    ap.add_argument("--rotate", type=int, default=0, metavar="K",
                    help="run the policies still to run starting from the K-th (mod their count), so that across "
                         "invocations no policy always meets a fresh or a tired federation; the table keeps "
                         "--policies' order")
    ap.add_argument("--overhead-s", type=float, metavar="S",
                    help="use this per-job overhead (an earlier invocation's, recorded in its JSON) instead of "
                         "measuring it: the deadlines derive from it, so the job stream stays the same")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    if args.report_from:
        part = json.loads(Path(args.report_from).read_text())
        s = part["settings"]
        return finish(part["runs"], part["overhead_s"], {**SETTING_DEFAULTS, **s},
                      part.get("federation", "(not recorded)"), Path(args.out),
                      [p.strip() for p in s["policies"].split(",") if p.strip()])
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")
    if args.buffer_study:
        study = buffer_study(policies, args, args.buffer_study)
        out = Path(args.out) / f"buffer-{args.pattern}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(study, indent=1))
        print(json.dumps({"buffer_study": study, "episodes": args.buffer_study, "pattern": args.pattern}))
        return 0
    w = workload(args)
    predictions = {p: predict(p, w, args) for p in policies}
    if args.predict_only:
        print(json.dumps({"predictions": predictions}))
        return 0
    from docker_cluster.federation import Federation

    fed = Federation.attach(args.name)
    federation = f"{'+'.join(fed.spec.sc_ids())} ({'/'.join(str(m) for m in fed.spec.sc_memory_mb)} MB)"
    resumed: list[dict] = []
    if args.resume:
        resumed, overhead = load_resumable(resume_file(Path(args.resume), args), args, federation, predictions)
        rerun = {p.strip() for p in args.rerun.split(",") if p.strip()}
        resumed = [r for r in resumed if r["policy"] in policies and r["policy"] not in rerun]
        print(f"[federation] resumed {[r['policy'] for r in resumed]} (per-job overhead {overhead:.1f} s, "
              f"fingerprint {fingerprint(vars(args), overhead, federation)[:12]})", file=sys.stderr)
    tmp = Path(args.out) / "logs"
    tmp.mkdir(parents=True, exist_ok=True)
    if args.overhead_s is not None and not args.resume:
        overhead = args.overhead_s
    elif not args.resume:
        fed.restart_router(router_settings("maf", args))
        fed.restart_engine("maf")
        wait_router_policy(fed)
        overhead = run_one_job_alone(fed, tmp, args.jvm_opts)
        print(f"[federation] per-job overhead (1-map 1 s job alone): {overhead:.1f} s", file=sys.stderr)
    fp = fingerprint(vars(args), overhead, federation)
    jobs = real_jobs(w, args, overhead)
    runs = list(resumed)
    todo = [p for p in policies if p not in {r["policy"] for r in resumed}]
    if todo:
        k = args.rotate % len(todo)
        todo = todo[k:] + todo[:k]
    partial = Path(args.out) / f"federation-{args.pattern}-{args.jobs}{output_suffix(args)}.partial.json"
    for p in todo:
        r = run_policy(fed, p, jobs, args, tmp)
        r["prediction"] = predictions[p]
        r["fingerprint"] = fp
        r["run_position"] = todo.index(p)
        runs.append(r)
        partial.write_text(json.dumps({"runs": runs, "overhead_s": overhead, "settings": vars(args),
                                       "federation": federation, "fingerprint": fp}, indent=1))
        print(f"[federation] {p}: TMDL {r['tmdl']} (emulator {predictions[p]['tmdl']}), AJDR {r['ajdr']:.1f}, "
              f"succeeded {r['succeeded']}/{r['jobs']}, fallbacks {r['router'].get('FallbacksTotal')}",
              file=sys.stderr)
    runs.sort(key=lambda r: policies.index(r["policy"]))
    return finish(runs, overhead, vars(args), federation, Path(args.out), policies)


def finish(runs: list[dict], overhead: float, settings: dict, federation: str, out_dir: Path,
           policies: list[str]) -> int:
    """The result of the policies that ran (all of them, or those a cut-short run finished): JSON, table, PNG."""
    runs = sorted(runs, key=lambda r: policies.index(r["policy"]) if r["policy"] in policies else len(policies))
    real_rank = rank({r["policy"]: r["tmdl"] for r in runs})
    pred_rank = rank({r["policy"]: r["prediction"]["tmdl"] for r in runs})
    done = [r["policy"] for r in runs]
    result = {"benchmark": "federation", "federation": federation, "pattern": settings["pattern"],
              "jobs": settings["jobs"], "seed": settings["seed"], "overhead_s": overhead, "settings": settings,
              "runs": runs, "policies_not_run": [p for p in policies if p not in done],
              "ranking_real": real_rank, "ranking_predicted": pred_rank,
              "ranking_preserved": rank_text({r["policy"]: r["tmdl"] for r in runs})
              == rank_text({r["policy"]: r["prediction"]["tmdl"] for r in runs}),
              "pair_agreement": pair_agreement({r["policy"]: r["tmdl"] for r in runs},
                                               {r["policy"]: r["prediction"]["tmdl"] for r in runs})}
    suffix = output_suffix(argparse.Namespace(**settings))
    fps = {r.get("fingerprint") for r in runs} - {None}
    result["fingerprint"] = fps.pop() if len(fps) == 1 else None
    out = out_dir / f"federation-{settings['pattern']}-{settings['jobs']}{suffix}"
    out.parent.mkdir(parents=True, exist_ok=True)
    Path(str(out) + ".json").write_text(json.dumps(result, indent=1))
    Path(str(out) + ".partial.json").unlink(missing_ok=True)
    write_report(result, out)
    print(Path(str(out) + ".md").read_text())
    summary = {k: v for k, v in result.items() if k != "runs"}
    summary["runs"] = [{k: v for k, v in r.items() if k != "rows"} for r in runs]
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
