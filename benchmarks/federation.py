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

Writes benchmarks/results/federation/federation-<pattern>-<jobs>.{json,md,png}; one JSON object is the last line.
"""

from __future__ import annotations

import argparse
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
    for _, _, p in procs:
        try:
            p.wait(timeout=max(60.0, args.job_timeout - (time.monotonic() - t0)))
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
                                           "FallbacksBreakerOpen", "DecisionMicrosP50", "DecisionMicrosP99",
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
    if result.get("policies_not_run"):
        lines += ["", f"Not run (the run was cut short): {', '.join(result['policies_not_run'])}."]
    real = rank_text({r["policy"]: r["tmdl"] for r in result["runs"]})
    pred = rank_text({r["policy"]: r["prediction"]["tmdl"] for r in result["runs"]})
    lines += ["", f"TMDL ranking, real: {real}; emulator: {pred} (preserved: {real == pred}; of the "
                  f"{pa['ordered_pairs']} policy pairs the emulator orders strictly, {pa['agreeing']} in the same "
                  "order)."]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
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
    fig.savefig(out.with_suffix(".png"), dpi=110)


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
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    if args.report_from:
        part = json.loads(Path(args.report_from).read_text())
        s = part["settings"]
        return finish(part["runs"], part["overhead_s"], s, part.get("federation", "(not recorded)"), Path(args.out),
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
    tmp = Path(args.out) / "logs"
    tmp.mkdir(parents=True, exist_ok=True)
    fed.restart_router(router_settings("maf", args))
    fed.restart_engine("maf")
    wait_router_policy(fed)
    overhead = run_one_job_alone(fed, tmp, args.jvm_opts)
    print(f"[federation] per-job overhead (1-map 1 s job alone): {overhead:.1f} s", file=sys.stderr)
    jobs = real_jobs(w, args, overhead)
    runs = []
    for p in policies:
        r = run_policy(fed, p, jobs, args, tmp)
        r["prediction"] = predictions[p]
        runs.append(r)
        partial = Path(args.out) / f"federation-{args.pattern}-{args.jobs}.partial.json"
        partial.write_text(json.dumps({"runs": runs, "overhead_s": overhead, "settings": vars(args),
                                       "federation": f"{'+'.join(fed.spec.sc_ids())} "
                                       f"({'/'.join(str(m) for m in fed.spec.sc_memory_mb)} MB)"}, indent=1))
        print(f"[federation] {p}: TMDL {r['tmdl']} (emulator {predictions[p]['tmdl']}), AJDR {r['ajdr']:.1f}, "
              f"succeeded {r['succeeded']}/{r['jobs']}, fallbacks {r['router'].get('FallbacksTotal')}",
              file=sys.stderr)
    return finish(runs, overhead, vars(args), f"{'+'.join(fed.spec.sc_ids())} "
                  f"({'/'.join(str(m) for m in fed.spec.sc_memory_mb)} MB)", Path(args.out), policies)


def finish(runs: list[dict], overhead: float, settings: dict, federation: str, out_dir: Path,
           policies: list[str]) -> int:
    """The result of the policies that ran (all of them, or those a cut-short run finished): JSON, table, PNG."""
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
    out = out_dir / f"federation-{settings['pattern']}-{settings['jobs']}"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    (out_dir / f"federation-{settings['pattern']}-{settings['jobs']}.partial.json").unlink(missing_ok=True)
    write_report(result, out)
    print(out.with_suffix(".md").read_text())
    summary = {k: v for k, v in result.items() if k != "runs"}
    summary["runs"] = [{k: v for k, v in r.items() if k != "rows"} for r in runs]
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
