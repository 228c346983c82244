"""HiBench's MapReduce micro workloads on a real Hadoop cluster, one engine policy at a time, HiBench's report format.

The workloads are HiBench's own (bin/workloads/micro/*/prepare and hadoop/run.sh), run with Hadoop's example jobs:

    wordcount  prepare: randomtextwriter (totalbytes = profile size, bytespermap = size / maps)
               run:     wordcount over SequenceFiles (HiBench's -D input/output format settings)
    sort       prepare: randomtextwriter;  run: sort -outKey Text -outValue Text -r REDUCES
    terasort   prepare: teragen ROWS;      run: terasort -D mapreduce.job.reduces=REDUCES

Profiles (HiBench's conf/workloads/micro/*.conf): wordcount tiny 32,000 B / small 320 MB / large 3.2 GB; sort tiny
32,000 B / small 3.2 MB / large 320 MB; terasort tiny 32,000 rows / small 3.2 M / large 32 M. Parallelism 8 maps and
8 reduces (hibench.default.map/shuffle.parallelism).

Every workload's input is prepared once; then for each policy only the engine container is restarted with that
policy and every workload runs on the same data. Each run appends one line to report/hibench.report exactly as
HiBench's gen_report does (header on a new file; printf "%-12s %-10s %-8s %-20s %-20s %-20s %-20s"; Duration in
seconds with 3 decimals; Throughput = input bytes / duration, integer; Throughput/node = that / worker hosts).
Also written: report/hibench-compare.md (per-policy table with the RM's engine counters and MapReduce locality
counters), report/hibench.png, and one JSON object as the last line of stdout.

Jobs are tagged yarnrl.input=<input path> (application tags, lower-cased by YARN, hence lower-case HDFS paths), so
the engine reads the inputs' block and cache locations over WebHDFS.

    make cluster-up POLICY=fifo
    .venv/bin/python benchmarks/hibench.py --cluster docker --workloads wordcount,terasort --profile tiny \\
        --policies fifo,delay

--cluster mini runs the same jobs on the py4j-driven mini cluster of benchmarks/real_locality.py (MiniDFSCluster
with 4 DataNodes in 2 racks + MiniYARNCluster with RlScheduler in one JVM, a real engine per policy); no Docker:

    .venv/bin/python benchmarks/hibench.py --cluster mini --workloads wordcount --profile tiny --policies fifo,delay
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

REPORT_FORMAT = "%-12s %-10s %-8s %-20s %-20s %-20s %-20s"
REPORT_HEADER = ("Type", "Date", "Time", "Input_data_size", "Duration(s)", "Throughput(bytes/s)", "Throughput/node")
MAPS = 8
REDUCES = 8

# HiBench conf/workloads/micro/<workload>.conf: bytes (wordcount, sort) or rows (terasort) per profile
PROFILES = {
    "wordcount": {"tiny": 32_000, "small": 320_000_000, "large": 3_200_000_000},
    "sort": {"tiny": 32_000, "small": 3_200_000, "large": 320_000_000},
    "terasort": {"tiny": 32_000, "small": 3_200_000, "large": 32_000_000},
}
TYPES = {"wordcount": "HadoopWordcount", "sort": "HadoopSort", "terasort": "HadoopTerasort"}
SEQ = "org.apache.hadoop.mapreduce.lib"


@dataclass
class Run:
    workload: str
    policy: str
    profile: str
    input_bytes: int
    duration_s: float
    throughput_bytes_s: int
    succeeded: bool
    data_local_maps: int | None = None
    rack_local_maps: int | None = None
    launched_maps: int | None = None
    engine_decisions: int = 0
    engine_containers: int = 0
    fallbacks: int = 0
    report_line: str = ""
    error: str = ""
    extra: dict = field(default_factory=dict)


def report_line(workload: str, size: int, duration: float, nodes: int, when: dt.datetime) -> str:
    """One line exactly as HiBench's gen_report prints it (bc: duration scale=3, integer throughputs)."""
    duration = round(duration, 3)
    tput = int(size / duration) if duration > 0 else 0
    return REPORT_FORMAT % (TYPES[workload], when.strftime("%Y-%m-%d"), when.strftime("%H:%M:%S"), size,
                            f"{duration:.3f}", tput, tput // max(1, nodes))


def parse_report(path: Path) -> list[dict]:
    """Read a hibench.report back with its own header (used by the tests and the comparison table)."""
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    header = lines[0].split()
    if tuple(header) != REPORT_HEADER:
        raise ValueError(f"{path}: not a HiBench report header: {lines[0]!r}")
    rows = []
    for ln in lines[1:]:
        cols = ln.split()
        if len(cols) != len(header):
            raise ValueError(f"{path}: line does not match the header: {ln!r}")
        rows.append(dict(zip(header, cols)))
    return rows


def paths(workload: str) -> tuple[str, str]:
    base = f"/hibench/{workload}"
    return f"{base}/input", f"{base}/output"


def prepare_command(workload: str, size: int, inp: str, jar: str) -> list[str]:
    if workload == "terasort":
        return ["hadoop", "jar", jar, "teragen", "-D", f"mapreduce.job.maps={MAPS}", "-D",
                f"mapreduce.job.reduces={REDUCES}", str(size), inp]
    return ["hadoop", "jar", jar, "randomtextwriter", "-D", f"mapreduce.randomtextwriter.totalbytes={size}",
            "-D", f"mapreduce.randomtextwriter.bytespermap={size // MAPS}", "-D", f"mapreduce.job.maps={MAPS}",
            "-D", f"mapreduce.job.reduces={REDUCES}", inp]


def run_command(workload: str, inp: str, out: str, jar: str) -> list[str]:
    tags = ["-D", f"mapreduce.job.tags=yarnrl.input={inp}"]
    if workload == "wordcount":
        return ["hadoop", "jar", jar, "wordcount", *tags, "-D", f"mapreduce.job.maps={MAPS}", "-D",
                f"mapreduce.job.reduces={REDUCES}",
                "-D", f"mapreduce.inputformat.class={SEQ}.input.SequenceFileInputFormat",
                "-D", f"mapreduce.outputformat.class={SEQ}.output.SequenceFileOutputFormat",
                "-D", f"mapreduce.job.inputformat.class={SEQ}.input.SequenceFileInputFormat",
                "-D", f"mapreduce.job.outputformat.class={SEQ}.output.SequenceFileOutputFormat", inp, out]
    if workload == "sort":
        return ["hadoop", "jar", jar, "sort", *tags, "-outKey", "org.apache.hadoop.io.Text", "-outValue",
                "org.apache.hadoop.io.Text", "-r", str(REDUCES), inp, out]
    return ["hadoop", "jar", jar, "terasort", *tags, "-D", f"mapreduce.job.reduces={REDUCES}", inp, out]


def counter(output: str, name: str) -> int | None:
    m = re.search(rf"^\s*{re.escape(name)}=(\d+)\s*$", output, re.M)
    return int(m.group(1)) if m else None


class DockerTarget:
    """The cluster of docker_cluster/cluster.py (`make cluster-up`)."""

    def __init__(self, name: str, job_timeout: float):
        from docker_cluster import cluster as docker_cluster

        self.dc = docker_cluster
        self.cluster = docker_cluster.Cluster.attach(name)
        self.job_timeout = job_timeout
        self.nodes = self.cluster.spec.workers
        self.original_policy = self.cluster.spec.policy
        self.original_settings = list(self.cluster.spec.policy_settings)

    def sh(self, cmd: list[str], timeout: float | None = None, check: bool = True) -> tuple[int, str]:
        return self.cluster.exec(cmd, timeout=timeout or self.job_timeout, check=check)

    def input_bytes(self, path: str) -> int:
        # HiBench's dir_size: `hadoop fs -du -s PATH`, the first number (bytes of the files, one replica)
        _, out = self.sh(["hdfs", "dfs", "-du", "-s", path], timeout=120)
        return int(out.split()[0])

    def use_policy(self, policy: str, settings: list[str]) -> None:
        # always a fresh engine: every policy starts from the same (empty) state
        self.cluster.start_engine(policy, settings)

    def counters(self) -> dict:
        j = self.cluster.rm_jmx()
        return {k: j[k] for k in ("EngineDecisions", "EngineContainers", "Fallbacks")}

    def restore(self) -> None:
        """Leave the engine on the policy the cluster came with (no restart when the last run used it)."""
        spec = self.cluster.spec
        if spec.engine and (spec.policy, spec.policy_settings) != (self.original_policy, self.original_settings):
            self.cluster.start_engine(self.original_policy, self.original_settings)

    def prepare(self, workload: str, size: int, inp: str) -> int:
        """HiBench's prepare step; returns the input's bytes (HiBench's dir_size)."""
        self.sh(["hdfs", "dfs", "-rm", "-r", "-f", "-skipTrash", inp], timeout=120)
        self.sh(prepare_command(workload, size, inp, self.dc.EXAMPLES_JAR))
        return self.input_bytes(inp)

    def run(self, workload: str, inp: str, out: str) -> tuple[bool, float, dict, str]:
        """One HiBench job: (succeeded, duration s, MapReduce locality counters, output tail on failure)."""
        self.sh(["hdfs", "dfs", "-rm", "-r", "-f", "-skipTrash", out], timeout=120)
        t0 = time.monotonic()
        rc, output = self.sh(run_command(workload, inp, out, self.dc.EXAMPLES_JAR), check=False)
        duration = time.monotonic() - t0
        maps = {"data_local_maps": counter(output, "Data-local map tasks"),
                "rack_local_maps": counter(output, "Rack-local map tasks"),
                "launched_maps": counter(output, "Launched map tasks")}
        return rc == 0, duration, maps, "" if rc == 0 else "\n".join(output.splitlines()[-15:])

    def close(self) -> None:
        self.restore()


class MiniTarget:
    """The mini cluster of benchmarks/real_locality.py: MiniDFSCluster (4 DataNodes, 2 racks) + MiniYARNCluster with
    RlScheduler in one JVM driven over py4j, and a real `policy-engine serve --webhdfs` restarted per policy. Its
    jobs are the same Hadoop example jobs, submitted through the JVM (org.yarnrl.yarn.LocalityLab)."""

    nodes = 4

    def __init__(self, workdir: Path, deadline_ms: int = 50):
        import shutil

        import real_locality as rl  # benchmarks/ (this script's folder)

        self.rl = rl
        rl.build_plugin()
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)
        self.workdir = workdir
        self.port, self.metrics_port = rl.free_port(), rl.free_port()
        self.cluster = rl.MiniCluster(workdir, f"127.0.0.1:{self.port}", deadline_ms)
        self.lab = self.cluster.lab
        self.lab.setReduces(REDUCES)
        self.engine = None

    def use_policy(self, policy: str, settings: list[str]) -> None:
        if self.engine is not None:
            self.engine.stop()
        options = [a for kv in settings for a in ("--set", kv)]
        self.engine = self.rl.Engine(policy, self.port, self.metrics_port, self.lab.webHdfsUrl(),
                                     self.workdir / f"engine-{policy}.log", options)

    def counters(self) -> dict:
        m = json.loads(self.lab.pluginMetrics())
        return {"EngineDecisions": m["engine_decisions"], "EngineContainers": m["engine_containers"],
                "Fallbacks": m["fallbacks"]}

    def input_bytes(self, path: str) -> int:
        import urllib.request

        url = f"{self.lab.webHdfsUrl()}/webhdfs/v1{path}?op=GETCONTENTSUMMARY"
        with urllib.request.urlopen(url, timeout=30) as r:  # HiBench's dir_size: `hadoop fs -du -s`
            return int(json.load(r)["ContentSummary"]["length"])

    def prepare(self, workload: str, size: int, inp: str) -> int:
        self.lab.delete(inp)
        rows_or_bytes = size
        per_map = size * (100 if workload == "terasort" else 1) / MAPS
        block = max(1 << 20, -(-int(per_map * 1.25) // (1 << 20)) * (1 << 20))  # one block per map, as HiBench's
        gen = json.loads(self.lab.teraGen(inp, rows_or_bytes, MAPS, block) if workload == "terasort"
                         else self.lab.randomText(inp, rows_or_bytes, MAPS, block))
        if not gen["succeeded"]:
            raise RuntimeError(f"preparing {inp} failed: {gen}")
        return self.input_bytes(inp)

    def run(self, workload: str, inp: str, out: str) -> tuple[bool, float, dict, str]:
        self.lab.delete(out)
        t0 = time.monotonic()
        r = json.loads(self.lab.run(workload, inp, out, f"yarnrl.input={inp}"))
        duration = time.monotonic() - t0
        maps = {"data_local_maps": r.get("DATA_LOCAL_MAPS"), "rack_local_maps": r.get("RACK_LOCAL_MAPS"),
                "launched_maps": r.get("TOTAL_LAUNCHED_MAPS")}
        return bool(r["succeeded"]), duration, maps, "" if r["succeeded"] else json.dumps(r)[-2000:]

    def close(self) -> None:
        if self.engine is not None:
            self.engine.stop()
        self.cluster.close()


def _progress(total: int):
    try:
        from tqdm import tqdm

        return tqdm(total=total, unit="job", file=sys.stderr, dynamic_ncols=True)
    except ImportError:  # pragma: no cover
        return None


def write_comparison(runs: list[Run], policies: list[str], path: Path) -> str:
    base = policies[0]
    rows = ["| workload | policy | input bytes | duration (s) | throughput (B/s) | vs " + base
            + " | data-local maps | rack-local maps | engine decisions | engine containers | fallbacks |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        ref = [b for b in runs if b.workload == r.workload and b.policy == base and b.succeeded]
        ratio = f"{r.duration_s / ref[0].duration_s:.2f}x" if ref and r.succeeded and ref[0].duration_s else "-"
        dur = f"{r.duration_s:.3f}" if r.succeeded else f"FAILED ({r.duration_s:.1f})"
        rows.append(f"| {r.workload} | {r.policy} | {r.input_bytes} | {dur} | {r.throughput_bytes_s} | {ratio} | "
                    f"{r.data_local_maps if r.data_local_maps is not None else '-'} | "
                    f"{r.rack_local_maps if r.rack_local_maps is not None else '-'} | {r.engine_decisions} | "
                    f"{r.engine_containers} | {r.fallbacks} |")
    text = "\n".join(rows) + "\n"
    path.write_text(text)
    return text


def write_plot(runs: list[Run], workloads: list[str], policies: list[str], profile: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1.8 + 1.6 * len(workloads), 3.6))
    width = 0.8 / max(1, len(policies))
    for k, pol in enumerate(policies):
        ys = []
        for w in workloads:
            ok = [r.duration_s for r in runs if r.workload == w and r.policy == pol and r.succeeded]
            ys.append(sum(ok) / len(ok) if ok else 0.0)
        xs = [i + (k - (len(policies) - 1) / 2) * width for i in range(len(workloads))]
        ax.bar(xs, ys, width, label=pol)
    ax.set_xticks(range(len(workloads)), [TYPES[w] for w in workloads])
    ax.set_ylabel("job duration (s)")
    ax.set_title(f"HiBench {profile}, docker cluster: duration per policy (lower is better)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--workloads", default="wordcount,sort,terasort", help="comma-separated (default all three)")
    ap.add_argument("--profile", default="tiny", choices=["tiny", "small", "large"], help="HiBench data size")
    ap.add_argument("--policies", default="fifo,delay", help="engine policies, run one after another "
                    "(the first is the table's reference; default fifo,delay)")
    ap.add_argument("--set", action="append", default=[], metavar="POLICY:KEY=VALUE",
                    help="a setting for one policy's engine, e.g. delay:node_locality_delay=4 (repeatable)")
    ap.add_argument("--cluster", default="docker", choices=["docker", "mini"], help="where the jobs run")
    ap.add_argument("--name", default="yarnrl", help="docker cluster name (make cluster-up's default: yarnrl)")
    ap.add_argument("--repeats", type=int, default=1, help="runs of each workload per policy (default 1)")
    ap.add_argument("--report-dir", default=str(ROOT / "report"), help="where hibench.report goes (default report/)")
    ap.add_argument("--job-timeout", type=float, default=1800, help="seconds per Hadoop job (default 1800)")
    ap.add_argument("--workdir", default=str(ROOT / "yarn_plugin" / "target" / "hibench-mini"),
                    help="--cluster mini: the mini cluster's directory and logs (default yarn_plugin/target/hibench-mini)")
    args = ap.parse_args(argv)

    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    unknown = [w for w in workloads if w not in PROFILES]
    if unknown or not workloads:
        ap.error(f"--workloads: unknown {unknown}; choose from {sorted(PROFILES)}")
    if not policies:
        ap.error("--policies: give at least one policy")
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    settings: dict[str, list[str]] = {p: [] for p in policies}
    for s in args.set:
        pol, sep, kv = s.partition(":")
        if not sep or pol not in settings or "=" not in kv:
            ap.error(f"--set {s!r}: expected POLICY:KEY=VALUE with POLICY one of {policies}")
        settings[pol].append(kv)
    from policy_engine.policy import UnknownPolicy, spec

    for pol in policies:  # fail before any job runs, with the registered names
        try:
            if "schedule" not in spec(pol).capabilities:
                ap.error(f"--policies: {pol} does not schedule node heartbeats (a routing policy)")
        except UnknownPolicy as e:
            ap.error(f"--policies: {e}")

    from docker_cluster import cluster as docker_cluster
    from docker_cluster import images

    try:
        if args.cluster == "mini":
            target = MiniTarget(Path(args.workdir))
        else:
            target = DockerTarget(args.name, args.job_timeout)
    except (images.DockerUnavailable, docker_cluster.ClusterError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    report_dir = Path(args.report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    report = report_dir / "hibench.report"
    runs: list[Run] = []
    bar = _progress(len(workloads) * (1 + len(policies) * args.repeats))

    def step(msg: str) -> None:
        if bar is not None:
            bar.set_description(msg)
        else:
            print(msg, file=sys.stderr, flush=True)

    try:
        # prepare once: every policy reads identical data
        sizes: dict[str, int] = {}
        for w in workloads:
            inp, _ = paths(w)
            step(f"prepare {w}")
            sizes[w] = target.prepare(w, PROFILES[w][args.profile], inp)
            if bar is not None:
                bar.update()
        for pol in policies:
            step(f"engine -> {pol}")
            target.use_policy(pol, settings[pol])
            for _ in range(args.repeats):
                for w in workloads:
                    inp, out = paths(w)
                    step(f"{pol}: {w}")
                    before = target.counters()
                    ok, duration, maps, error = target.run(w, inp, out)
                    when = dt.datetime.now()
                    after = target.counters()
                    line = report_line(w, sizes[w], duration, target.nodes, when)
                    if ok:  # HiBench writes a line only for a job that succeeded (run_hadoop_job exits otherwise)
                        new = not report.exists()
                        with report.open("a") as f:
                            if new:
                                f.write((REPORT_FORMAT % REPORT_HEADER) + "\n")
                            f.write(line + "\n")
                    tput = int(sizes[w] / round(duration, 3)) if ok else 0
                    runs.append(Run(
                        workload=w, policy=pol, profile=args.profile, input_bytes=sizes[w],
                        duration_s=round(duration, 3), throughput_bytes_s=tput, succeeded=ok,
                        **maps,
                        engine_decisions=after["EngineDecisions"] - before["EngineDecisions"],
                        engine_containers=after["EngineContainers"] - before["EngineContainers"],
                        fallbacks=after["Fallbacks"] - before["Fallbacks"],
                        report_line=line if ok else "",
                        error=error))
                    if not ok:
                        print(f"\n{pol}/{w} FAILED:\n{runs[-1].error}", file=sys.stderr)
                    if bar is not None:
                        bar.update()
    except (docker_cluster.ClusterError, images.DockerUnavailable) as e:
        print(f"\nerror: {e}", file=sys.stderr)
        return 1
    finally:
        if bar is not None:
            bar.close()
        try:
            target.close()
        except Exception as e:  # the runs are what matters; say why the cluster was not left as it was
            print(f"warning: could not restore the cluster's engine or stop the mini cluster: {e}", file=sys.stderr)

    table = write_comparison(runs, policies, report_dir / "hibench-compare.md")
    png = report_dir / "hibench.png"
    write_plot(runs, workloads, policies, args.profile, png)
    print(f"\nHiBench {args.profile} on the {args.cluster} cluster ({target.nodes} workers), report {report}:\n")
    print(table)
    print(json.dumps({"report": str(report), "table": str(report_dir / "hibench-compare.md"), "png": str(png),
                      "runs": [{k: v for k, v in asdict(r).items() if k not in ("extra",)} for r in runs]}))
    return 0 if all(r.succeeded for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
