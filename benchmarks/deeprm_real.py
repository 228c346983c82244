"""DeepRM on a real YARN: a seeded stream of single-container jobs in DeepRM's shape on the container cluster.

The stream is the `deeprm` scenario's job set (Mao et al., HotNets 2016; the DeepRM reproduction's setting): per
DeepRM step (`--step-ms` of real time) up to one arrival per node, 80 % short jobs (1-3 steps) and 20 % long
(10-15), two resources (memory, vcores), one of them dominant (5-10 of the node's 20 units) and the other 1-2
units, arrivals set for `--load` (0.75) per node. Each job is a YARN application with one container that runs
`sleep LENGTH` (submitted by benchmarks/deeprm_jobs/SleepJobs.java, one client JVM for the whole stream) tagged
`yarnrl.expected-runtime-ms=LENGTH`. A node has 20 units: memory `--unit-mb` (256) MB per unit, 1 vcore per unit
(NodeManagers of 20 x 256 MB and 20 vcores; the ResourceManager's maximum allocation raised to 20 vcores).

Each policy (deeprm-pg with the shipped model, sjf, packer, fifo) serves the same stream behind RlCapacityScheduler
with DominantResourceCalculator (`--scheduler capacity`, with CAPACITY_DEEPRM's queue settings) or RlScheduler (the
engine container restarted with it; the engine builds DeepRM's view of each heartbeat, see
algorithms/deeprm/view.py); `--runs` job sets (seeds `--seed`, `--seed`+1, ...), policies interleaved within a
run. Per job from the RM's REST API: job time = finish - submit, slowdown = job time / tagged length. Beside each
policy: the emulator's prediction for the same job sets (`deeprm` scenario, heartbeats=yarn, the same number of
nodes), in seconds. `--cluster emulator` computes only the prediction (and `--mapping` the node vs pooled image
study on 1, 2 and 4 nodes).

    flock /tmp/yarnrl-cluster.lock .venv/bin/python benchmarks/deeprm_real.py --cluster docker --runs 3
    .venv/bin/python benchmarks/deeprm_real.py --cluster emulator --mapping

Writes benchmarks/results/deeprm_real/deeprm_real-{docker-capacity,docker-rlscheduler,emulator}.json, a PNG and a
Markdown table; the last line of stdout is one JSON object: {"policies": {POLICY: {"slowdown", "job_time_s", "emulator_slowdown",
"emulator_job_time_s", ...}}, ...}.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from algorithms.deeprm.sim import DeepRMConfig, DeepRMSimulation  # noqa: E402
from emulator.drivers import make_driver  # noqa: E402
from emulator.scenario import get_scenario  # noqa: E402
from algorithms.deeprm.view import DeepRMViewConfig  # noqa: E402
from policy_engine.waiting import WaitTimeout, wait_until  # noqa: E402

POLICIES = ("deeprm-pg", "sjf", "packer", "fifo")
LABEL = {"deeprm-pg": "DeepRM-PG", "sjf": "SJF", "packer": "Packer", "fifo": "FIFO"}
MODEL = ROOT / "models" / "deeprm-pg.safetensors"
OUT = ROOT / "benchmarks" / "results" / "deeprm_real"
RES_SLOT = 20
WAIT_CAP_MS = 300_000            # the plugin's wait cap for DeepRM's deliberate holds: 5 min (150 steps)
WAIT_CAP_HEARTBEATS = 10_000_000   # the largest heartbeat cap: only the time cap bounds a hold
# CapacityScheduler's settings for a queue of DeepRM jobs, each job one application whose only container is its AM
# (yarn_plugin/README.md, "DeepRM"):
CAPACITY_DEEPRM = {
    # CapacityScheduler activates an application only while the AMs of the activated ones, allocated or not, fit in
    # maximum-am-resource-percent of the queue, and never allocates to one it has not activated (the plugin asks the
    # engine only about activated ones). At 1.0 only the jobs of a submission-order prefix worth one cluster are
    # activated, so no policy can choose beyond them; 100 (x the queue) activates every waiting job, as RlScheduler
    # (FifoScheduler: no AM limit) shows them all
    "yarn.scheduler.capacity.maximum-am-resource-percent": "100",
    # CapacityScheduler places at most this many off-switch containers per node heartbeat (default 1, to spread
    # tasks); a DeepRM job's one ask is off-switch, so at 1 the jobs a policy starts together start one per
    # heartbeat: as many as the node has units, as RlScheduler and DeepRM's model start them
    "yarn.scheduler.capacity.per-node-heartbeat.maximum-offswitch-assignments": str(RES_SLOT),
}
ENGINE_SITE = "/opt/venv/lib/python3.11/site-packages/policy_engine"   # where the engine image installs it


def config(args, nodes: int | None = None) -> DeepRMConfig:
    return DeepRMConfig(load=args.load, simu_len=args.simu_len, nodes=nodes or args.workers)


def stream(args, seed: int) -> list[dict]:
    """The job set of one run: arrival offset (ms), length (ms), memory (MB), vcores, in arrival order."""
    sim = DeepRMSimulation(config(args), seed)
    return [{"name": f"dr{seed}-{j:03d}", "offset_ms": int(sim.arrival[j]) * args.step_ms,
             "runtime_ms": int(sim.length[j]) * args.step_ms, "steps": int(sim.length[j]),
             "memory_mb": int(sim.demand[j][0]) * args.unit_mb, "vcores": int(sim.demand[j][1])}
            for j in range(sim.num_jobs)]


def predict(args, policy: str, seeds: list[int], nodes: int | None = None, image: str = "node") -> dict:
    """The emulator's slowdown and job time (s) for these job sets, plugin-shaped heartbeats."""
    scenario = get_scenario("deeprm", load=args.load, simu_len=args.simu_len, nodes=nodes or args.workers,
                            heartbeats="yarn")
    with make_driver(policy, model=str(MODEL) if policy == "deeprm-pg" else None,
                     deeprm=DeepRMViewConfig(image=image)) as d:
        runs = [scenario.run_episode(d, s) for s in seeds]
    return {"slowdown": float(np.mean([r["slowdown"] for r in runs])),
            "job_time_s": float(np.mean([r["completion_time"] for r in runs])) * args.step_ms / 1000.0,
            "per_run_slowdown": [r["slowdown"] for r in runs], "dropped": sum(r["dropped"] for r in runs)}


def emulator_starts(args, policy: str, seed: int) -> list[int]:
    """Each job's start step in the emulator (plugin-shaped heartbeats, as the `deeprm` scenario with
    heartbeats=yarn drives them; one node when --workers 1)."""
    sim = DeepRMSimulation(config(args), seed)
    nodes = args.workers
    with make_driver(policy, model=str(MODEL) if policy == "deeprm-pg" else None) as d:
        while not sim.done and not sim.truncated:
            for i in range(nodes):
                node = (sim.t + i) % nodes
                if sim.any_waiting_fits(node):
                    sim.apply_yarn(d.schedule(sim.observe_yarn(node)), node)
            sim.advance()
            events = sim.take_events()
            if events:
                d.report(events)
    return [int(x) for x in sim.start]


def agreement(args, policy: str, seed: int, rows: list[dict], start_ms: int | None = None) -> dict:
    """How closely the real run followed the emulator: each job's real start step (its container's launch,
    counted from the stream's start in --step-ms) against the emulator's start step for the same job."""
    jobs = stream(args, seed)
    emu = emulator_starts(args, policy, seed)
    by_name = {r["name"]: r for r in rows if r.get("done") and r.get("launch")}
    if not by_name:
        return {}
    if start_ms:
        t0 = start_ms
    else:   # runs before the submitter printed its start: the first submission as the stream's start
        first = min(by_name.values(), key=lambda r: r["submit"])
        t0 = first["submit"] - next(j["offset_ms"] for j in jobs if j["name"] == first["name"])
    diffs = []
    for j, e in zip(jobs, emu):
        r = by_name.get(j["name"])
        if r is not None and e >= 0:
            diffs.append((r["launch"] - t0) / args.step_ms - e)
    d = np.asarray(diffs)
    return {"jobs": int(d.size), "same_step": float(np.mean(np.abs(d) < 0.5)),
            "within_1_step": float(np.mean(np.abs(d) < 1.5)), "mean_delay_steps": float(d.mean())}


def mapping_study(args) -> dict:
    """Node vs pooled image on 1, 2 and 4 nodes (emulator, 20 job sets each): what the many-nodes mapping costs."""
    seeds = list(range(args.seed, args.seed + 20))
    out: dict = {}
    for nodes in (1, 2, 4):
        for image in ("node", "pooled"):
            for p in ("deeprm-pg", "sjf", "packer"):
                out.setdefault(f"{nodes}", {}).setdefault(image, {})[p] = round(
                    predict(args, p, seeds, nodes, image)["slowdown"], 4)
    return out


# ----------------------------------------------------------------------------------------------- the real cluster

def http_json(url: str, timeout: float = 10.0) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 (the cluster's loopback port)
        return json.loads(r.read().decode())


def compile_submitter(workdir: Path) -> Path:
    libs = [ROOT / "docker" / "hadoop" / "target" / "lib", Path("/work/main/docker/hadoop/target/lib")]
    lib = next((p for p in libs if p.is_dir()), None)
    if lib is None:
        raise SystemExit("deeprm_real: no Hadoop jars to compile SleepJobs against (run `make images` once)")
    out = workdir / "classes"
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(["javac", "-d", str(out), "--release", "17", "-cp", f"{lib}/*",
                    str(ROOT / "benchmarks" / "deeprm_jobs" / "SleepJobs.java")], check=True)
    return out / "SleepJobs.class"


class RealCluster:
    def __init__(self, args, log):
        from docker_cluster.cluster import Cluster, ClusterSpec

        self.args, self.log = args, log
        rm = {"yarn.scheduler.maximum-allocation-vcores": str(RES_SLOT),
              "yarn.scheduler.maximum-allocation-mb": str(RES_SLOT * args.unit_mb),
              # DeepRM holds fitting jobs back by design (it chooses the order). The plugin's default wait cap
              # (node-locality-delay + nodes = 41 heartbeats, 20 s at 500 ms) is CapacityScheduler's locality rule
              # and would turn those holds into native FIFO starts; deployed for DeepRM, the wait is bounded by
              # time instead (yarn_plugin/README, "DeepRM"): WAIT_CAP_MS, far above any hold in this stream.
              "yarnrl.engine.wait.max-heartbeats": str(WAIT_CAP_HEARTBEATS),
              "yarnrl.engine.wait.max-ms": str(WAIT_CAP_MS)}
        if args.scheduler == "capacity":
            # RlCapacityScheduler with DominantResourceCalculator: RlScheduler is FifoScheduler's bookkeeping, whose
            # DefaultResourceCalculator normalizes every request to 1 vcore, so vcores would not be a resource there
            rm.update({"yarn.resourcemanager.scheduler.class": "org.yarnrl.yarn.RlCapacityScheduler",
                       "yarn.scheduler.capacity.resource-calculator":
                           "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator",
                       "yarn.scheduler.capacity.root.default.yarnrl.engine.enabled": "true"})
            rm.update(CAPACITY_DEEPRM)
        spec = ClusterSpec(name=args.name, workers=args.workers, racks=1, policy="fifo", nn_port=0, rm_port=0,
                           metrics_port=0, grpc_port=0, nm_memory_mb=RES_SLOT * args.unit_mb, nm_vcores=RES_SLOT,
                           # 200 ms, not the cluster's 50: a fallback schedules FIFO, which would blur the comparison
                           # on two cores shared with the cluster's JVMs (fallbacks are counted per run)
                           engine_deadline_ms=200,
                           rm_properties=rm)
        self.cluster = Cluster(spec)

    def up(self, workdir: Path) -> None:
        self.log(f"starting cluster {self.args.name} ({self.args.workers} worker(s))")
        self.cluster.up(timeout=600, build=False, progress=self.log)
        # which ResourceCalculator the RM really uses (CapacityScheduler logs it at start): the two-resource run
        # is only one if it is DominantResourceCalculator
        found = re.search(r"calculator=(?:class )?([\w.$]+)", self.cluster.logs("rm", lines=20000))
        self.calculator = found.group(1) if found else None
        self.log(f"RM resource calculator: {self.calculator}")
        if self.args.scheduler == "capacity" and self.calculator and "Dominant" not in self.calculator:
            raise RuntimeError(f"--scheduler capacity but the RM uses {self.calculator}")
        cls = compile_submitter(workdir)
        c = self.cluster.spec.container("client")
        subprocess.run(["docker", "exec", c, "mkdir", "-p", "/tmp/sj"], check=True)
        subprocess.run(["docker", "cp", str(cls), f"{c}:/tmp/sj/SleepJobs.class"], check=True)

    def down(self) -> None:
        self.cluster.down(quiet=True)

    def engine(self, policy: str) -> None:
        args = ["--deeprm-step-ms", str(self.args.step_ms)]
        volumes = {str(ROOT / "policy_engine"): (ENGINE_SITE, "ro")}
        if policy == "deeprm-pg":
            args += ["--model", "/models/deeprm-pg.safetensors"]
            volumes[str(MODEL.parent)] = ("/models", "ro")
        self.cluster.start_engine(policy, args=args, volumes=volumes, timeout=120)
        time.sleep(3)   # the RM's channel reconnects to the restarted engine

    def run(self, jobs: list[dict], workdir: Path, label: str) -> dict:
        rm = self.cluster.rm_url
        c = self.cluster.spec.container("client")
        lines = "".join(f"{j['offset_ms']} {j['name']} {j['memory_mb']} {j['vcores']} {j['runtime_ms']}\n"
                        for j in jobs)
        decisions0 = self.cluster.engine_metric("yarnrl_decisions_total")
        jmx0 = self.cluster.rm_jmx()
        t0 = time.time() * 1000
        proc = subprocess.run(["docker", "exec", "-i", c, "bash", "-c",
                               "java -Xmx256m -cp /tmp/sj:$(hadoop classpath) SleepJobs"],
                              input=lines, capture_output=True, text=True, timeout=self.args.simu_len
                              * self.args.step_ms / 1000 + 300)
        if proc.returncode != 0:
            raise RuntimeError(f"SleepJobs failed: {proc.stderr[-2000:]}")
        ids = {}
        start_ms = None
        for line in proc.stdout.splitlines():
            parts = line.split()
            if parts and parts[0] == "submitted":
                ids[parts[2]] = parts[1]
            elif parts and parts[0] == "start":
                start_ms = int(parts[1])
        by_name = {j["name"]: j for j in jobs}
        apps: dict = {}

        def every_job_ended() -> bool:
            listing = http_json(f"{rm}/ws/v1/cluster/apps?applicationTypes=SLEEP&startedTimeBegin={int(t0) - 1000}")
            apps.clear()
            apps.update({a["id"]: a for a in ((listing.get("apps") or {}).get("app") or []) if a["id"] in ids})
            return sum(a["state"] in ("FINISHED", "FAILED", "KILLED") for a in apps.values()) == len(ids)

        try:
            wait_until(every_job_ended, self.args.drain_s, "every job to end", interval_s=2.0)
        except WaitTimeout:
            pass  # the rows below record the jobs that had not ended ("done": False)
        jmx1 = self.cluster.rm_jmx()
        rows = []
        for app_id, name in ids.items():
            a = apps.get(app_id)
            j = by_name[name]
            if a is None or a["state"] not in ("FINISHED", "FAILED", "KILLED") or not a.get("finishedTime"):
                rows.append({"name": name, "done": False})
                continue
            ok = "exitCode: 0" in (a.get("diagnostics") or "") or a.get("finalStatus") == "SUCCEEDED"
            job_ms = a["finishedTime"] - a["startedTime"]
            rows.append({"name": name, "app": app_id, "done": True, "exit0": ok, "submit": a["startedTime"],
                         "launch": a.get("launchTime", 0), "finish": a["finishedTime"], "job_ms": job_ms,
                         "runtime_ms": j["runtime_ms"], "slowdown": job_ms / j["runtime_ms"],
                         "wait_ms": (a.get("launchTime") or a["finishedTime"]) - a["startedTime"],
                         "long": j["steps"] >= 10})
        done = [r for r in rows if r["done"]]
        late = [r["submit"] - start_ms - by_name[r["name"]]["offset_ms"] for r in done] if start_ms else []
        res = {"jobs": len(jobs), "submitted": len(ids), "completed": len(done), "stream_start_ms": start_ms,
               # how late each job was submitted against the stream (the submitter's own delay), ms
               "submit_late_ms": {"mean": float(np.mean(late)), "max": float(np.max(late))} if late else None,
               "exit0": sum(1 for r in done if r["exit0"]),
               "slowdown": float(np.mean([r["slowdown"] for r in done])) if done else float("nan"),
               "job_time_s": float(np.mean([r["job_ms"] for r in done])) / 1000 if done else float("nan"),
               "wait_s": float(np.mean([r["wait_ms"] for r in done])) / 1000 if done else float("nan"),
               # what the emulator does not model: launch to finish beyond the sleep (container start, the exit
               # reaching the RM), and the slowdown a job would have with no waiting at all
               "overhead_s": float(np.mean([(r["finish"] - r["launch"] - r["runtime_ms"]) for r in done
                                            if r["launch"]])) / 1000 if done else float("nan"),
               "unqueued_slowdown": float(np.mean([(r["finish"] - r["launch"]) / r["runtime_ms"] for r in done
                                                   if r["launch"]])) if done else float("nan"),
               "engine_decisions": self.cluster.engine_metric("yarnrl_decisions_total") - decisions0,
               "estimates": self.cluster.engine_metric("yarnrl_deeprm_runtime_estimates_total"),
               "fallbacks": {k: jmx1.get(k, 0) - jmx0.get(k, 0) for k in jmx1
                             if k.startswith("Fallback") and isinstance(jmx1.get(k), (int, float))},
               "jobs_detail": rows}
        (workdir / f"{label}.json").write_text(json.dumps(res, indent=1))
        return res


def analyze(args, policies: list[str], workdir: Path) -> dict:
    """Per policy, the real runs' start steps against the emulator's (from a docker run's per-run files)."""
    out = {}
    for p in policies:
        rows = []
        for seed in [args.seed + r for r in range(args.runs)]:
            f = workdir / f"{p}-seed{seed}.json"
            if f.exists():
                run = json.loads(f.read_text())
                rows.append(agreement(args, p, seed, run["jobs_detail"], run.get("stream_start_ms")))
        rows = [r for r in rows if r]
        if rows:
            out[p] = {k: float(np.mean([r[k] for r in rows])) for k in ("same_step", "within_1_step",
                                                                        "mean_delay_steps")}
    return out


# ----------------------------------------------------------------------------------------------- report

def table(result: dict) -> str:
    lines = ["| policy | slowdown (real) | slowdown (emulator) | job time s (real) | job time s (emulator) | "
             "runs | jobs done |", "|---|---|---|---|---|---|---|"]
    for p, r in result["policies"].items():
        real = r.get("slowdown")
        sd = "-" if real is None else "%.3f ± %.3f" % (real, r["slowdown_std"])
        jt = "-" if real is None else "%.1f" % r["job_time_s"]
        lines.append(f"| {LABEL[p]} | {sd} | {r['emulator_slowdown']:.3f} | {jt} | {r['emulator_job_time_s']:.1f} | "
                     f"{r.get('runs', 0)} | {r.get('completed', '-')}/{r.get('jobs', '-')} |")
    return "\n".join(lines)


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pols = list(result["policies"])
    x = np.arange(len(pols))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, title in ((axes[0], "slowdown", "mean job slowdown"), (axes[1], "job_time_s", "mean job time (s)")):
        real = [result["policies"][p].get(key) or 0 for p in pols]
        emu = [result["policies"][p][f"emulator_{key}"] for p in pols]
        ax.bar(x - 0.2, real, 0.4, label=f"real ({result['cluster']})")
        ax.bar(x + 0.2, emu, 0.4, label="emulator")
        if key == "slowdown":
            err = [result["policies"][p].get("slowdown_std") or 0 for p in pols]
            ax.errorbar(x - 0.2, real, yerr=err, fmt="none", color="k", capsize=3)
        ax.set_xticks(x, [LABEL[p] for p in pols])
        ax.set_title(title)
        ax.legend(loc="lower right", framealpha=0.9)
    sched = {"capacity": "RlCapacityScheduler + DRF", "fifo": "RlScheduler"}.get(result.get("scheduler"), "")
    fig.suptitle(f"DeepRM stream on YARN ({sched}): {result['workers']} node(s), load {result['load']}, "
                 f"step {result['step_ms']} ms, {result['runs_done']} run(s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def result_name(args) -> str:
    if args.cluster != "docker" and not getattr(args, "collect", False):
        return f"deeprm_real-{args.cluster}"
    return "deeprm_real-docker-" + {"fifo": "rlscheduler", "capacity": "capacity"}[args.scheduler]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--cluster", choices=["docker", "emulator"], default="emulator",
                    help="docker: the container cluster (docker_cluster/cluster.py, started and removed here); emulator: "
                         "only the emulator's prediction")
    ap.add_argument("--runs", type=int, default=3, help="job sets (seeds --seed ..), each under every policy")
    ap.add_argument("--seed", type=int, default=1, help="first job set's seed (default 1)")
    ap.add_argument("--policies", default=",".join(POLICIES), help="comma-separated (default: all four)")
    ap.add_argument("--load", type=float, default=0.75, help="offered load per node (default 0.75)")
    ap.add_argument("--simu-len", type=int, default=40, help="DeepRM steps with arrivals per job set (default 40)")
    ap.add_argument("--step-ms", type=int, default=2000, help="real time of one DeepRM step (default 2000)")
    ap.add_argument("--workers", type=int, default=1, help="NodeManagers, 20 units each (default 1)")
    ap.add_argument("--unit-mb", type=int, default=256, help="memory of one DeepRM unit (default 256 MB)")
    ap.add_argument("--drain-s", type=float, default=400, help="the longest wait for a run's jobs to finish")
    ap.add_argument("--name", default="deeprm-real", help="container cluster name (default deeprm-real)")
    ap.add_argument("--scheduler", choices=["capacity", "fifo"], default="capacity",
                    help="capacity: RlCapacityScheduler with DominantResourceCalculator (memory and vcores both "
                         "enforced; default); fifo: RlScheduler, where FIFO's DefaultResourceCalculator makes every "
                         "container 1 vcore (memory the only resource YARN counts)")
    ap.add_argument("--stop-at", metavar="HH:MM", help="start no run after this UTC time; report the runs done")
    ap.add_argument("--mapping", action="store_true", help="also the node vs pooled image study (emulator)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--collect", action="store_true",
                    help="no run: the table, JSON and PNG from the per-run files of earlier docker runs of these seeds "
                         "(OUT/runs-SCHEDULER/POLICY-seedN.json), e.g. runs made in several stretches of the lock")
    ap.add_argument("--analyze", type=Path, metavar="WORKDIR",
                    help="only compare a finished docker run's per-run files (its work directory) with the emulator's "
                         "start steps and add that to deeprm_real-docker-{rlscheduler,capacity}.json")
    args = ap.parse_args(argv)
    policies = [p for p in args.policies.split(",") if p]
    unknown = [p for p in policies if p not in LABEL]
    if unknown or args.runs < 1:
        ap.error(f"unknown policies {unknown} (choose from {', '.join(POLICIES)}) or --runs < 1")
    args.out.mkdir(parents=True, exist_ok=True)
    seeds = [args.seed + r for r in range(args.runs)]
    if args.analyze is not None:
        path = args.out / f"{result_name(args)}.json"
        result = json.loads(path.read_text())
        result["start_agreement"] = analyze(args, policies, args.analyze)
        path.write_text(json.dumps(result, indent=1))
        print(json.dumps(result["start_agreement"]))
        return 0

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    if args.collect:   # only the job sets every policy ran; the emulator's prediction for exactly those
        seeds = [s for s in seeds if all((args.out / f"runs-{args.scheduler}" / f"{p}-seed{s}.json").exists()
                                         for p in policies)]
        if not seeds:
            ap.error(f"--collect: no job set of seeds {args.seed}..{args.seed + args.runs - 1} has every policy's "
                     f"file in {args.out / f'runs-{args.scheduler}'}")
    result: dict = {"cluster": args.cluster, "scheduler": args.scheduler, "workers": args.workers, "load": args.load, "step_ms": args.step_ms,
                    "simu_len": args.simu_len, "unit_mb": args.unit_mb, "seeds": seeds, "policies": {}}
    for p in policies:
        pred = predict(args, p, seeds)
        result["policies"][p] = {"emulator_slowdown": pred["slowdown"], "emulator_job_time_s": pred["job_time_s"],
                                 "emulator_per_run": pred["per_run_slowdown"]}
    if args.mapping:
        result["mapping"] = mapping_study(args)
    runs_done = 0
    if args.cluster == "docker":
        import signal

        def stop(*_):
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, stop)   # a background job ignores SIGINT: TERM also ends with the teardown
        workdir = Path(tempfile.mkdtemp(prefix="deeprm-real-"))
        runs_dir = f"runs-{args.scheduler}"
        real = RealCluster(args, log)
        per: dict = {p: [] for p in policies}
        try:
            real.up(workdir)
            result["resource_calculator"] = real.calculator
            result["wait_cap"] = {"max_ms": WAIT_CAP_MS, "max_heartbeats": WAIT_CAP_HEARTBEATS}
            if args.scheduler == "capacity":
                result["capacity_settings"] = CAPACITY_DEEPRM
            for r, seed in enumerate(seeds):
                if args.stop_at and time.strftime("%H:%M", time.gmtime()) >= args.stop_at:
                    log(f"--stop-at {args.stop_at}: no more runs ({r} done)")
                    break
                jobs = stream(args, seed)
                for p in policies:
                    log(f"run {r + 1}/{len(seeds)} (seed {seed}, {len(jobs)} jobs): {p}")
                    real.engine(p)
                    res = real.run(jobs, workdir, f"{p}-seed{seed}")
                    log(f"  slowdown {res['slowdown']:.3f}, job time {res['job_time_s']:.1f} s, "
                        f"{res['completed']}/{res['jobs']} done, decisions {res['engine_decisions']:.0f}, "
                        f"fallbacks {res['fallbacks']}")
                    per[p].append({k: v for k, v in res.items() if k != "jobs_detail"} | {"seed": seed})
                    (args.out / runs_dir).mkdir(exist_ok=True)
                    (args.out / runs_dir / f"{p}-seed{seed}.json").write_text(json.dumps(res))
                    result["per_run"] = per
                    partial = args.out / f"deeprm_real-docker-{args.scheduler}.partial.json"
                    partial.write_text(json.dumps(result, indent=1))
                runs_done += 1
        except KeyboardInterrupt:
            log("interrupted: reporting the runs done so far")
        finally:
            real.down()
    if args.collect:
        # the per-run files of docker runs made in several stretches (e.g. --seed 1 --runs 1, then --seed 2 --runs 2)
        runs_dir = f"runs-{args.scheduler}"
        per = {p: [] for p in policies}
        for seed in seeds:
            files = {p: args.out / runs_dir / f"{p}-seed{seed}.json" for p in policies}
            for p, f in files.items():
                run = json.loads(f.read_text())
                per[p].append({k: v for k, v in run.items() if k != "jobs_detail"} | {"seed": seed})
            runs_done += 1
        result["cluster"] = "docker"
        result["per_run"] = per
        result["wait_cap"] = {"max_ms": WAIT_CAP_MS, "max_heartbeats": WAIT_CAP_HEARTBEATS}
        if args.scheduler == "capacity":
            result["capacity_settings"] = CAPACITY_DEEPRM
            result["resource_calculator"] = "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator"
    if args.cluster == "docker" or args.collect:
        result["start_agreement"] = analyze(args, policies, args.out / runs_dir)
        for p in policies:
            rs = [x for x in per[p] if x["completed"]]
            if not rs:
                continue
            sl = [x["slowdown"] for x in rs]
            result["policies"][p].update(
                slowdown=float(np.mean(sl)), slowdown_std=float(np.std(sl)),
                job_time_s=float(np.mean([x["job_time_s"] for x in rs])),
                wait_s=float(np.mean([x["wait_s"] for x in rs])), runs=len(rs),
                overhead_s=float(np.mean([x.get("overhead_s", float("nan")) for x in rs])),
                completed=sum(x["completed"] for x in rs), jobs=sum(x["jobs"] for x in rs),
                engine_decisions=sum(x["engine_decisions"] for x in rs))
    result["runs_done"] = runs_done if args.cluster == "docker" or args.collect else len(seeds)
    emu_rank = sorted(policies, key=lambda p: result["policies"][p]["emulator_slowdown"])
    result["emulator_ranking"] = emu_rank
    if all("slowdown" in result["policies"][p] for p in policies):
        result["real_ranking"] = sorted(policies, key=lambda p: result["policies"][p]["slowdown"])
        result["ranking_preserved"] = result["real_ranking"] == emu_rank
    name = result_name(args)
    (args.out / f"{name}.json").write_text(json.dumps(result, indent=1))
    (args.out / f"{name}.md").write_text(table(result) + "\n")
    try:
        plot(result, args.out / f"{name}.png")
    except ImportError:
        log("matplotlib missing: no PNG")
    print(table(result))
    if "mapping" in result:
        print(json.dumps(result["mapping"]))
    print(json.dumps({k: v for k, v in result.items() if k != "per_run"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
