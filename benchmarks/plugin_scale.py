"""Scale of the plugin: a real ResourceManager scheduler with thousands of simulated NodeManagers, native vs engine.

Each case is one JVM (yarn_plugin's test class org.yarnrl.yarn.bench.SchedulerScale): Hadoop's MockRM - a real
ResourceManager (ResourceTrackerService, RMNode state machines, the RM dispatcher and YARN's asynchronous scheduler
event queue) - with `--nodes` MockNMs heartbeating every second (containers reported RUNNING, then COMPLETE after a
random lifetime) and unmanaged ApplicationMasters (MockAM, one per 250 nodes) that keep a backlog of MapReduce-like
map asks (3 preferred hosts each, asked per host, rack and ANY) large enough to keep the cluster busy. Per scheduler:

* native: YARN's own scheduler class (FifoScheduler, CapacityScheduler);
* engine: the yarn-rl scheduler (RlScheduler, RlCapacityScheduler) asking a real `policy-engine serve` subprocess
  with one Schedule call per heartbeat, one case per `--policies` entry;
* batched: the same with the batched engine path on (`yarnrl.engine.batch.enabled=true`: held heartbeats decided
  in one ScheduleBatch call per cycle, yarn_plugin/README.md "Batched engine path").

Reported per case, over `--seconds` after `--warmup-seconds`: heartbeats (NODE_UPDATE events) the scheduler handled
per second, containers allocated per second, the scheduler event queue length (p99, sampled every 50 ms), NODE_UPDATE
handling time p50/p99 and its CPU time on the scheduler thread (p50/p99/mean: what a node update costs, whatever the
machine's load), where the scheduler thread's time went per event type (CPU and wall), cluster utilization and the
plugin's fallbacks and snapshot counters (by reason, from its JMX bean); for engine cases also engine/native
containers/s and heartbeats/s, the engine-decided share (containers placed by an engine answer / all containers,
over the measured window), fallbacks by reason, the engine process's CPU per decision (/proc, whole run) and its
decision latency p50/p99 (inside the engine, from its Prometheus histogram). Prints a table, writes results.json and
two PNGs under --out (throughput per case; engine-decided share and containers/s against node count), and prints one
JSON object as the last stdout line: {"results": [{"scheduler", "mode", "policy", "nodes", "heartbeats_per_s",
"containers_per_s", "queue_p99", "fallbacks", "engine_decided_share", "fallbacks_by_reason", ...}]}.

Schedulers: fifo, capacity (CapacityScheduler with asynchronous scheduling off) and capacity-async (on, as Hadoop
3.5.0 ships it; RlCapacityScheduler then installs each answer as its node's plan, applied by CapacityScheduler's own
threads).

Needs Java 17 and Maven (the plugin and its test classes are built on first use) and `make install`. Run it under
`nice -n 10` on a shared machine:

    .venv/bin/python benchmarks/plugin_scale.py --nodes 5000,10000    # issue 24's matrix: 16 cases, 20-25 min
    .venv/bin/python benchmarks/plugin_scale.py --nodes 1000 --modes native,engine,batched --policies fifo
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

import real_locality as rl  # noqa: E402  (build_plugin, java17_opens, the plugin's paths)
from policy_engine import metrics_scrape  # noqa: E402
from policy_engine.metrics_scrape import Metrics  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "plugin_scale"
MAIN_CLASS = "org.yarnrl.yarn.bench.SchedulerScale"
# scheduler -> (native class, engine class, where the engine class is compiled)
SCHEDULERS = {
    "fifo": ("org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler", "org.yarnrl.yarn.RlScheduler"),
    "capacity": ("org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler",
                 "org.yarnrl.yarn.RlCapacityScheduler"),
    "capacity-async": ("org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler",
                       "org.yarnrl.yarn.RlCapacityScheduler"),
}
# The default matrix: the schedulers issue 24's goals name (capacity, asynchronous scheduling off, on request).
DEFAULT_SCHEDULERS = ("fifo", "capacity-async")
# Engine cases that cannot run yet, and why (reported in the JSON's "unavailable", never silently left out).
ENGINE_UNAVAILABLE: dict[str, str] = {}
# Modes in which the yarn-rl scheduler asks the engine: per heartbeat, or batched.
ENGINE_MODES = ("engine", "batched")
JSON_KEYS = ("scheduler", "mode", "policy", "nodes", "heartbeats_per_s", "containers_per_s", "queue_p99", "fallbacks")


PROGRESS = sys.stdout  # sys.stderr with --json: stdout then carries only the JSON line


def log(*args) -> None:
    print(*args, file=PROGRESS, flush=True)


def csv(kind, cast=str):
    def parse(text: str):
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {kind}, got {text!r}")
        try:
            return [cast(t) for t in items]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {kind}, got {text!r}") from None
    return parse


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="Timing numbers depend on the machine's load: on a shared machine compare the "
                                       "modes of one run, not runs of different days.")
    p.add_argument("--nodes", type=csv("node counts", int), default=[1000, 5000, 10000],
                   help="simulated NodeManagers, comma-separated (default 1000,5000,10000)")
    p.add_argument("--scheduler", type=csv("schedulers"), default=list(DEFAULT_SCHEDULERS),
                   help=f"schedulers: {', '.join(SCHEDULERS)} (default {','.join(DEFAULT_SCHEDULERS)}: issue 24's "
                        "goals, FIFO and CapacityScheduler with asynchronous scheduling on as 3.5.0 ships it)")
    p.add_argument("--policies", type=csv("policies"), default=["fifo", "delay", "clqlmrs"],
                   help="engine policies, one engine case each (default fifo,delay,clqlmrs)")
    p.add_argument("--modes", type=csv("modes"), default=["native", "batched"],
                   help="native, batched (ScheduleBatch per cycle, yarnrl.engine.batch.enabled=true), engine (one "
                        "Schedule call per heartbeat, yarnrl.engine.batch.enabled=false); default native,batched: "
                        "the default matrix at --nodes 5000,10000 is 16 cases, ~20-25 min on 2 cores")
    p.add_argument("--seconds", type=int, default=15, help="measured seconds per case (default 15)")
    p.add_argument("--warmup-seconds", type=int, default=10,
                   help="seconds before measuring, for the cluster to fill up (default 10)")
    p.add_argument("--lifetime-s", type=float, default=10.0,
                   help="mean container lifetime, uniform in [0.5, 1.5] x this (default 10)")
    p.add_argument("--hosts-per-task", type=int, default=3,
                   help="preferred hosts per pending task, asked per host and rack (0: ANY only; default 3)")
    p.add_argument("--apps", type=int, default=0, help="ApplicationMasters (default: one per 250 nodes, at least 2)")
    p.add_argument("--deadline-ms", type=int, default=20,
                   help="the plugin's per-call engine deadline, yarnrl.engine.deadline-ms (default 20; batched "
                        "mode: yarnrl.engine.batch.deadline-ms, at least 250)")
    p.add_argument("--heap", default="3g", help="JVM heap per case (default 3g)")
    p.add_argument("--out", type=Path, default=RESULTS, help=f"results directory (default {RESULTS.relative_to(ROOT)})")
    p.add_argument("--engine-profile", action="store_true",
                   help="run each engine under cProfile: OUT/work/<case>/engine.prof and engine_profile.txt (the "
                        "event loop's thread; inflates the engine's CPU, so not for the reported timings)")
    p.add_argument("--no-plot", dest="plot", action="store_false", help="skip the PNG")
    p.add_argument("--json", action="store_true", help="print only the final JSON line on stdout (progress to stderr)")
    args = p.parse_args(argv)
    for s in args.scheduler:
        if s not in SCHEDULERS:
            p.error(f"--scheduler: unknown scheduler {s!r}; valid: {', '.join(SCHEDULERS)}")
    for m in args.modes:
        if m not in ("native", *ENGINE_MODES):
            p.error(f"--modes: unknown mode {m!r}; valid: native, {', '.join(ENGINE_MODES)}")
    if any(n <= 0 for n in args.nodes):
        p.error("--nodes must be positive")
    if args.seconds <= 0 or args.warmup_seconds < 0 or args.lifetime_s <= 0 or args.deadline_ms <= 0:
        p.error("--seconds, --lifetime-s and --deadline-ms must be positive, --warmup-seconds not negative")
    if any(m in ENGINE_MODES for m in args.modes):
        from policy_engine.policy import available
        names = [s.name for s in available()]
        for pol in args.policies:
            if pol not in names:
                p.error(f"--policies: unknown policy {pol!r}; valid: {', '.join(names)}")
    return args


def class_built(name: str) -> bool:
    return (rl.TARGET / "classes" / (name.replace(".", "/") + ".class")).exists()


def write_hosts(path: Path, nodes: int) -> None:
    """jdk.net.hosts.file for the JVM: the simulated hosts resolve locally (no DNS lookups per heartbeat)."""
    lines = ["127.0.0.1 localhost", f"127.0.0.1 {socket.gethostname()}"]
    lines += [f"127.0.0.1 h{i:05d}" for i in range(nodes)]
    path.write_text("\n".join(lines) + "\n")


def engine_conf(scheduler: str, target: str, deadline_ms: int, batched: bool = False) -> list[str]:
    """yarn-site (and capacity-scheduler) settings that point the yarn-rl scheduler at the engine; with
    RlCapacityScheduler the benchmark's one queue, root.default, opts in; batched: the batched engine path on."""
    conf = [f"yarnrl.engine.address={target}", f"yarnrl.engine.deadline-ms={deadline_ms}"]
    if scheduler in ("capacity", "capacity-async"):
        conf.append("yarn.scheduler.capacity.root.default.yarnrl.engine.enabled=true")
    if batched:  # a batch is many decisions: its deadline is at least the plugin's default (250 ms)
        conf += ["yarnrl.engine.batch.enabled=true", f"yarnrl.engine.batch.deadline-ms={max(deadline_ms, 250)}"]
    else:  # one Schedule call per heartbeat, whatever the plugin's default
        conf.append("yarnrl.engine.batch.enabled=false")
    return conf


def run_case(args, workdir: Path, scheduler: str, mode: str, policy: str, nodes: int) -> dict:
    label = f"{scheduler}/{mode}" + (f"/{policy}" if mode in ENGINE_MODES else "") + f"/{nodes}"
    cls = SCHEDULERS[scheduler][0 if mode == "native" else 1]
    case_dir = workdir / label.replace("/", "-")  # jvm.log, engine.log, result.json
    case_dir.mkdir(parents=True, exist_ok=True)
    hosts = workdir / "hosts"
    if not hosts.exists() or len(hosts.read_text().splitlines()) < nodes + 2:
        write_hosts(hosts, max(nodes, 5000))
    log4j = workdir / "log4j.properties"
    log4j.write_text("log4j.rootLogger=WARN,stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
                     "log4j.appender.stderr.Target=System.err\nlog4j.appender.stderr.layout="
                     "org.apache.log4j.PatternLayout\nlog4j.appender.stderr.layout.ConversionPattern="
                     "%d{ISO8601} %p %c{2}: %m%n\n")
    engine = None
    # Hadoop 3.5's CapacityScheduler allocates from its own threads by default (schedule-asynchronously); the engine
    # decides inside node updates, which RlCapacityScheduler needs that off for, so both capacity cases run with it off
    conf = ["yarn.scheduler.capacity.schedule-asynchronously.enable=false"] if scheduler == "capacity" else []
    if scheduler == "capacity-async":
        conf = ["yarn.scheduler.capacity.schedule-asynchronously.enable=true"]
    metrics_port = None
    if mode in ENGINE_MODES:
        from policy_engine.cli import start_engine_subprocess

        engine_log = open(case_dir / "engine.log", "w")
        metrics_port = free_port()
        profile = case_dir / "engine.prof" if args.engine_profile else None
        if profile is not None:
            profile.unlink(missing_ok=True)
        proc, target = start_engine_subprocess(policy, ["--grace", "1", "--metrics-port", str(metrics_port)],
                                               profile=profile)
        engine = (proc, engine_log)
        engine_cpu0 = process_cpu_s(proc.pid)

        def pump():
            for line in proc.stdout:
                engine_log.write(line)
                engine_log.flush()

        threading.Thread(target=pump, daemon=True).start()
        conf += engine_conf(scheduler, target, args.deadline_ms, batched=mode == "batched")
    out = case_dir / "result.json"
    out.unlink(missing_ok=True)
    classpath = os.pathsep.join([str(rl.TEST_CLASSES), str(rl.SHADED_JAR), rl.CLASSPATH_FILE.read_text().strip()])
    cmd = ["java", f"-Xmx{args.heap}", *rl.java17_opens().split(), "-Djava.net.preferIPv4Stack=true",
           f"-Djdk.net.hosts.file={hosts}", "-Dsun.net.inetaddr.ttl=-1", f"-Dlog4j.configuration=file:{log4j}",
           "-cp", classpath, MAIN_CLASS, "--scheduler-class", cls, "--label", label, "--nodes", str(nodes),
           "--seconds", str(args.seconds), "--warmup-seconds", str(args.warmup_seconds),
           "--lifetime-s", str(args.lifetime_s), "--hosts-per-task", str(args.hosts_per_task),
           "--apps", str(args.apps), "--out", str(out)]
    for c in conf:
        cmd += ["--conf", c]
    # set-up (registering the nodes, starting the AMs) grows with the node count and the machine's load
    limit = 300 + args.warmup_seconds + args.seconds + nodes * 0.06
    log(f"--- {label}: {cls}" + (f" + policy-engine serve --policy {policy}" if engine else ""))
    started = time.monotonic()
    window_marks: list = []  # (engine CPU s, engine decisions) when the measured window starts and ends
    try:
        with open(case_dir / "jvm.log", "w") as jvm_log:
            # the JVM's progress lines (stdout) are relayed; the RM's WARN logs (stderr) go only to jvm.log
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=jvm_log, text=True)

            def relay():
                for line in proc.stdout:
                    if line.startswith("["):
                        print(line, end="", file=PROGRESS, flush=True)
                    if engine and line.rstrip().endswith(("] window starts", "] window ends")):
                        window_marks.append(engine_counters(engine[0].pid, metrics_port))

            t = threading.Thread(target=relay, daemon=True)
            t.start()
            try:
                proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise SystemExit(f"plugin_scale: case {label} ran past {limit:.0f} s; see {case_dir / 'jvm.log'}")
            t.join(10)
        if proc.returncode != 0 or not out.exists():
            raise SystemExit(f"plugin_scale: case {label} failed (exit {proc.returncode}); see {case_dir / 'jvm.log'}")
        result = json.loads(out.read_text())
        if engine:
            result["engine_process"] = engine_side(engine[0].pid, engine_cpu0, metrics_port)
            if len(window_marks) == 2 and None not in window_marks:
                (cpu0, dec0), (cpu1, dec1) = window_marks
                result["engine_process"]["window_cpu_s"] = cpu1 - cpu0
                result["engine_process"]["window_decisions"] = dec1 - dec0
    finally:
        if engine:
            eproc, elog = engine
            if eproc.poll() is None:
                eproc.send_signal(signal.SIGTERM)
                try:
                    eproc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    eproc.kill()
            elog.close()
            if args.engine_profile and (case_dir / "engine.prof").exists():
                write_profile(case_dir / "engine.prof", case_dir / "engine_profile.txt")
    row = {"scheduler": scheduler, "mode": mode, "policy": policy if mode in ENGINE_MODES else "native",
           "nodes": nodes}
    row.update({k: result[k] for k in ("heartbeats_per_s", "containers_per_s", "queue_p99", "fallbacks")})
    row.update({k: v for k, v in result.items() if k not in row})
    row["case_seconds"] = time.monotonic() - started
    add_engine_figures(row)
    return row


def write_profile(stats_file: Path, out: Path, top: int = 40) -> None:
    """The engine's cProfile stats as text: the functions with the most time of their own, then the most in all."""
    import io
    import pstats

    buf = io.StringIO()
    stats = pstats.Stats(str(stats_file), stream=buf).strip_dirs()
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    out.write_text(buf.getvalue())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def histogram_quantile(buckets: list[tuple[float, float]], q: float) -> float:
    """Prometheus-style quantile from cumulative (upper bound, count) buckets, in any order."""
    return metrics_scrape.histogram_quantile(sorted(buckets), q)


def engine_side(pid: int, cpu0: float, metrics_port: int | None) -> dict:
    """The engine process over the whole case: CPU seconds, decisions (its own counter), decision latency inside
    the engine (its histogram, per RPC)."""
    out: dict = {"cpu_s": process_cpu_s(pid) - cpu0}
    if metrics_port is None:
        return out
    try:
        m = Metrics.scrape(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5)
    except OSError as e:
        out["metrics_error"] = str(e)
        return out
    out["decisions"] = m.total("yarnrl_decisions_total")
    for rpc in m.by_label("yarnrl_decision_latency_seconds_count", "rpc"):
        b = m.buckets("yarnrl_decision_latency_seconds", rpc=rpc)
        if b and max(c for _, c in b) > 0:
            out[f"{rpc}_latency_p50_ms"] = histogram_quantile(b, 0.50) * 1e3
            out[f"{rpc}_latency_p99_ms"] = histogram_quantile(b, 0.99) * 1e3
    return out


def engine_counters(pid: int, metrics_port: int | None) -> tuple[float, float] | None:
    """The engine's CPU seconds and decisions so far (None when it cannot be read)."""
    if metrics_port is None:
        return None
    try:
        m = Metrics.scrape(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5)
        return process_cpu_s(pid), m.total("yarnrl_decisions_total")
    except OSError:
        return None


FALLBACK_REASONS = ("Timeout", "Unavailable", "Error", "InvalidAnswer", "BreakerOpen", "VersionMismatch",
                    "WaitHeartbeats", "WaitTime", "StalePlan", "RefusedNode")


def add_engine_figures(row: dict) -> None:
    """What issue 24 asks each engine case for: engine-decided share, fallbacks by reason, engine CPU per decision
    and decision latency."""
    if row["mode"] not in ENGINE_MODES:
        return
    window = row.get("engine") or {}
    eng, nat = window.get("EngineContainers", 0), window.get("NativeContainers", 0)
    row["engine_decided_share"] = eng / (eng + nat) if eng + nat else 0.0
    row["fallbacks_by_reason"] = {r: window.get(f"Fallbacks{r}", 0) for r in FALLBACK_REASONS
                                  if window.get(f"Fallbacks{r}", 0)}
    proc = row.get("engine_process") or {}
    if proc.get("decisions"):
        row["engine_cpu_us_per_decision_whole_case"] = proc["cpu_s"] / proc["decisions"] * 1e6
        row["engine_cpu_us_per_decision"] = row["engine_cpu_us_per_decision_whole_case"]
        row["engine_cpu_basis"] = "whole case"
    if proc.get("window_decisions"):
        # over the measured window: Report traffic included, start-up and registration not
        row["engine_cpu_us_per_decision"] = proc["window_cpu_s"] / proc["window_decisions"] * 1e6
        row["engine_cpu_basis"] = "measured window"
        row["engine_decisions_per_s"] = proc["window_decisions"] / max(row.get("seconds") or 1, 1e-9)
    for key in ("schedule_latency_p50_ms", "schedule_latency_p99_ms", "schedule_batch_latency_p50_ms",
                "schedule_batch_latency_p99_ms"):
        if key in proc:
            row[f"engine_{key}"] = proc[key]


def add_ratios(rows: list[dict]) -> None:
    native = {(r["scheduler"], r["nodes"]): r for r in rows if r["mode"] == "native"}
    for r in rows:
        n = native.get((r["scheduler"], r["nodes"]))
        if r["mode"] in ENGINE_MODES and n and n["containers_per_s"] > 0:
            r["containers_ratio"] = r["containers_per_s"] / n["containers_per_s"]
            r["heartbeats_ratio"] = r["heartbeats_per_s"] / max(n["heartbeats_per_s"], 1e-9)


def table(rows: list[dict]) -> str:
    head = (f"{'scheduler':<14} {'mode':<7} {'policy':<6} {'nodes':>5} {'hb sent/s':>9} {'hb/s':>7} {'cont/s':>7} "
            f"{'ratio':>5} {'util':>5} {'queue p99':>9} {'nu p50 us':>9} {'nu p99 us':>9} {'nu cpu us':>9} "
            f"{'fallbacks':>9} {'share':>5} {'eng us':>6}")
    lines = [head, "-" * len(head)]
    for r in rows:
        ratio = f"{r['containers_ratio']:.2f}" if "containers_ratio" in r else "-"
        lines.append(f"{r['scheduler']:<14} {r['mode']:<7} {r['policy']:<6} {r['nodes']:>5} "
                     f"{r['heartbeats_sent_per_s']:>9.0f} {r['heartbeats_per_s']:>7.0f} {r['containers_per_s']:>7.0f} "
                     f"{ratio:>5} {r['utilization']:>5.2f} {r['queue_p99']:>9.0f} {r['node_update_p50_us']:>9.0f} "
                     f"{r['node_update_p99_us']:>9.0f} {r['node_update_cpu_mean_us']:>9.0f} {r['fallbacks']:>9} "
                     + (f"{r['engine_decided_share']:>5.2f} " if "engine_decided_share" in r else f"{'-':>5} ")
                     + (f"{r['engine_cpu_us_per_decision']:>6.0f}" if "engine_cpu_us_per_decision" in r
                        else f"{'-':>6}"))
    return "\n".join(lines)


def case_label(row: dict) -> str:
    return f"{row['scheduler']} " + (f"{row['mode']} ({row['policy']})" if row["mode"] in ENGINE_MODES else "native")


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nodes = sorted({r["nodes"] for r in rows})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    labels = []
    for r in rows:
        lab = case_label(r)
        if lab not in labels:
            labels.append(lab)
    width = 0.8 / max(len(labels), 1)
    for ax, key, title in ((axes[0], "containers_per_s", "containers allocated / s"),
                           (axes[1], "heartbeats_per_s", "heartbeats handled / s")):
        for i, lab in enumerate(labels):
            ys = []
            for n in nodes:
                match = [r for r in rows if r["nodes"] == n and case_label(r) == lab]
                ys.append(match[0][key] if match else 0)
            ax.bar([j + i * width for j in range(len(nodes))], ys, width, label=lab)
        ax.set_xticks([j + width * (len(labels) - 1) / 2 for j in range(len(nodes))], [f"{n} nodes" for n in nodes])
        ax.set_title(title)
    axes[0].legend(fontsize=8)
    fig.suptitle("yarn-rl plugin at scale: native scheduler vs plugin + policy engine (MockRM, 1 s heartbeats)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_scaling(rows: list[dict], path: Path) -> None:
    """Engine-decided share, containers/s (as a ratio to native) and the engine's CPU per decision against node
    count, one line per engine case: where the engine saturates shows as the share falling while the ratio holds
    (the plugin falls back)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    for lab in dict.fromkeys(case_label(r) for r in rows if r["mode"] in ENGINE_MODES):
        case = sorted((r for r in rows if case_label(r) == lab), key=lambda r: r["nodes"])
        xs = [r["nodes"] for r in case]
        style = "o-" if case[0]["mode"] == "batched" else "x:"
        axes[0].plot(xs, [r.get("engine_decided_share", 0) for r in case], style, label=lab)
        axes[1].plot(xs, [r.get("containers_ratio", float("nan")) for r in case], style, label=lab)
        axes[2].plot(xs, [r.get("engine_cpu_us_per_decision", float("nan")) for r in case], style, label=lab)
    axes[0].axhline(0.95, color="grey", ls="--", lw=1)
    axes[1].axhline(0.9, color="grey", ls="--", lw=1)
    axes[2].axhline(30, color="grey", ls="--", lw=1)
    axes[0].set_ylim(0, 1.05)
    axes[2].set_yscale("log")
    axes[0].set_title("engine-decided share of containers (goal >= 0.95)")
    axes[1].set_title("containers/s, engine / native (goal >= 0.9)")
    axes[2].set_title("engine CPU per decision, us (goal <= 30)")
    for ax in axes:
        ax.set_xlabel("simulated NodeManagers (1 heartbeat/s each)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_results(args, rows: list[dict], unavailable: list[dict], wall_s: float, done: bool) -> dict:
    result = {"results": rows, "unavailable": unavailable, "load_average_1m": os.getloadavg()[0],
              "cpus": os.cpu_count(), "seconds": args.seconds, "warmup_seconds": args.warmup_seconds,
              "wall_s": wall_s, "complete": done}
    (args.out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


def main(argv=None) -> int:
    global PROGRESS
    args = parse_args(argv)
    PROGRESS = sys.stderr if args.json else sys.stdout
    rl.build_plugin(MAIN_CLASS)
    args.out.mkdir(parents=True, exist_ok=True)
    cases, unavailable = [], []
    for nodes in args.nodes:
        for scheduler in args.scheduler:
            if "native" in args.modes:
                cases.append((scheduler, "native", "native", nodes))
            for mode in (m for m in ENGINE_MODES if m in args.modes):
                engine_class = SCHEDULERS[scheduler][1]
                if scheduler in ENGINE_UNAVAILABLE:
                    unavailable.append({"scheduler": scheduler, "mode": mode, "nodes": nodes,
                                        "reason": ENGINE_UNAVAILABLE[scheduler]})
                    continue
                if not class_built(engine_class):
                    unavailable.append({"scheduler": scheduler, "mode": mode, "nodes": nodes,
                                        "reason": f"{engine_class} is not built in this checkout"})
                    continue
                cases += [(scheduler, mode, policy, nodes) for policy in args.policies]
    for u in unavailable:
        log(f"skipped: {u['scheduler']} engine at {u['nodes']} nodes: {u['reason']}")
    log(f"{len(cases)} cases, about {args.warmup_seconds + args.seconds} s of load each plus set-up")
    rows = []
    started = time.monotonic()
    for i, (scheduler, mode, policy, nodes) in enumerate(cases):  # logs, per-case files under OUT/work (not in git)
        log(f"[case {i + 1}/{len(cases)}, {(time.monotonic() - started) / 60:.1f} min so far]")
        rows.append(run_case(args, args.out / "work", scheduler, mode, policy, nodes))
        log(f"    {rows[-1]['heartbeats_per_s']:.0f} heartbeats/s, {rows[-1]['containers_per_s']:.0f} containers/s, "
            f"queue p99 {rows[-1]['queue_p99']:.0f}, fallbacks {rows[-1]['fallbacks']} "
            f"({rows[-1]['case_seconds']:.0f} s)")
        add_ratios(rows)  # written after every case: a run cut short keeps what it measured
        write_results(args, rows, unavailable, time.monotonic() - started, done=False)
    add_ratios(rows)
    log(table(rows))
    result = write_results(args, rows, unavailable, time.monotonic() - started, done=True)
    if args.plot and rows:
        try:
            plot(rows, args.out / "plugin_scale.png")
            log(f"plot: {args.out / 'plugin_scale.png'}")
            if any(r["mode"] in ENGINE_MODES for r in rows):
                plot_scaling(rows, args.out / "plugin_scale_share.png")
                log(f"plot: {args.out / 'plugin_scale_share.png'}")
        except ImportError:
            log("plot skipped: matplotlib is not installed")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
