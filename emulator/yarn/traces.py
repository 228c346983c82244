"""Workload traces YARN users already have, read into one form the node-heartbeat emulator runs.

Formats (Hadoop's Scheduler Load Simulator, hadoop-tools/hadoop-sls, and Rumen, hadoop-tools/hadoop-rumen):
  * sls    SLS JSON: a stream (or array) of jobs, each with `job.id`, `job.start.ms`, `job.end.ms`, `job.tasks`
           ([{`container.host` "/rack/host", `container.start.ms`, `container.end.ms`, `container.type` map|reduce,
           `container.priority`, optional `container.memory`, `container.vcores`, `count`}]), `job.queue.name`,
           `job.user`.
  * synth  SLS's synthetic generator description (SynthTraceJobProducer): `num_jobs`, `rand_seed`, `num_nodes`,
           `nodes_per_rack`, `workloads` [{`workload_weight`, `queue_name`, `job_classes` [{`class_weight`,
           `user_name`, `tasks` [{`type`, `count` {val, std}, `time` {val, std} (seconds), `max_memory` {val},
           `max_vcores` {val}}]}], `time_distribution` [{`time` (s), `weight`}]}]. Sampled with the episode seed
           (plus `rand_seed`): same seed, same workload.
  * rumen  Rumen job history (TraceBuilder's JSON): a stream (or array) of jobs with `jobID`, `submitTime`,
           `mapTasks` / `reduceTasks` [{`startTime`, `finishTime`, `preferredLocations` [{`layers` [rack, host]}],
           `attempts` [{`hostName`, `startTime`, `finishTime`, `result`}]}].
A nodes file (SLS's: a stream or array of {`rack`, `nodes` [{`node`, optional `memory_mb`, `vcores`}]}) gives the
cluster; without one the hosts named in the trace (or SYNTH's num_nodes / nodes_per_rack) make it.

A map task's hinted hosts are where its input block lives (its disk replicas); the trace's map duration is its
run time read disk-local, scaled by the emulator's read-rate model at other locality levels. Reduce durations are
taken as they are. Any field that is missing or malformed raises TraceError naming the file, the job, the task and
the field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

FORMATS = ("sls", "synth", "rumen")
DEFAULT_RACK = "/default-rack"


class TraceError(Exception):
    """A trace or nodes file that cannot be read; the message names the file and the field."""


@dataclass
class TraceTask:
    duration_ms: int
    hosts: tuple[str, ...] = ()     # preferred hosts (map input replicas); empty: none known
    memory_mb: int = 0              # 0: the workload default


@dataclass
class TraceJob:
    job_id: str
    submit_ms: int
    maps: list[TraceTask] = field(default_factory=list)
    reduces: list[TraceTask] = field(default_factory=list)
    queue: str = "default"
    user: str = ""


@dataclass
class TraceNode:
    host: str
    rack: str
    memory_mb: int = 0
    vcores: int = 0


@dataclass
class TraceWorkload:
    jobs: list[TraceJob]
    nodes: list[TraceNode]          # may be empty: derive from the jobs' hosts


def _load_json_stream(path: Path, what: str) -> list:
    """SLS and Rumen files are concatenated JSON objects (or one array of them)."""
    try:
        text = path.read_text()
    except OSError as e:
        raise TraceError(f"{what} {path}: cannot read ({e.strerror or e})") from None
    except UnicodeDecodeError:
        raise TraceError(f"{what} {path}: not a text (JSON) file") from None
    dec = json.JSONDecoder()
    out, i, n = [], 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            break
        try:
            obj, i = dec.raw_decode(text, i)
        except json.JSONDecodeError as e:
            raise TraceError(f"{what} {path}: not JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
        if isinstance(obj, list):
            out.extend(obj)
        else:
            out.append(obj)
    if not out:
        raise TraceError(f"{what} {path}: empty")
    return out


class _Fields:
    """Typed access to one JSON object, with errors that say where."""

    def __init__(self, obj, where: str):
        if not isinstance(obj, dict):
            raise TraceError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        self.obj, self.where = obj, where

    def get(self, key: str, kind: type, default=None, required: bool = True):
        if key not in self.obj or self.obj[key] is None:
            if required and default is None:
                raise TraceError(f"{self.where}: field {key!r} missing")
            return default
        v = self.obj[key]
        if kind in (int, float):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                if isinstance(v, str):
                    try:
                        v = float(v)
                    except ValueError:
                        raise TraceError(f"{self.where}: field {key!r} is not a number: {v!r}") from None
                else:
                    raise TraceError(f"{self.where}: field {key!r} is not a number: {v!r}")
            return kind(v)
        if kind is str:
            return str(v)
        if kind is list:
            if not isinstance(v, list):
                raise TraceError(f"{self.where}: field {key!r} is not a list")
            return v
        if kind is dict:
            if not isinstance(v, dict):
                raise TraceError(f"{self.where}: field {key!r} is not an object")
            return v
        return v


def _split_host(name: str) -> tuple[str, str]:
    """"/rack/host" (SLS, Rumen) into (host, rack); a bare host is in the default rack."""
    name = name.strip()
    if name.startswith("/") and name.count("/") >= 2:
        rack, _, host = name.rpartition("/")
        return host, rack
    return name, ""


def _duration(where: str, start: int, end: int, f_start: str, f_end: str) -> int:
    if end < start:
        raise TraceError(f"{where}: field {f_end!r} ({end}) is before {f_start!r} ({start})")
    return max(end - start, 1)


# ---------------------------------------------------------------- SLS


def read_sls(path: Path) -> TraceWorkload:
    jobs, racks = [], {}
    for j, obj in enumerate(_load_json_stream(path, "SLS trace")):
        f = _Fields(obj, f"SLS trace {path}: job {j}")
        job_id = f.get("job.id", str, f"job_{j}")
        f.where = f"SLS trace {path}: job {j} ({job_id})"
        submit = f.get("job.start.ms", int)
        tasks = f.get("job.tasks", list)
        job = TraceJob(job_id, submit, queue=f.get("job.queue.name", str, "default"), user=f.get("job.user", str, ""))
        for t, tobj in enumerate(tasks):
            tf = _Fields(tobj, f"{f.where} task {t}")
            start, end = tf.get("container.start.ms", int), tf.get("container.end.ms", int)
            dur = _duration(tf.where, start, end, "container.start.ms", "container.end.ms")
            kind = tf.get("container.type", str, "map").lower()
            if kind not in ("map", "reduce"):
                raise TraceError(f"{tf.where}: field 'container.type' is {kind!r}, not map or reduce")
            hosts = ()
            if "container.host" in tobj:
                host, rack = _split_host(tf.get("container.host", str))
                if not host:
                    raise TraceError(f"{tf.where}: field 'container.host' names no host")
                hosts = (host,)
                racks.setdefault(host, rack or DEFAULT_RACK)
            count = tf.get("count", int, 1)
            if count < 1:
                raise TraceError(f"{tf.where}: field 'count' must be at least 1, not {count}")
            task = TraceTask(dur, hosts, tf.get("container.memory", int, 0, required=False))
            (job.maps if kind == "map" else job.reduces).extend(TraceTask(task.duration_ms, task.hosts, task.memory_mb)
                                                               for _ in range(count))
        if not job.maps and not job.reduces:
            raise TraceError(f"{f.where}: field 'job.tasks' is empty")
        jobs.append(job)
    return TraceWorkload(jobs, [TraceNode(h, r) for h, r in racks.items()])


# ---------------------------------------------------------------- Rumen


def read_rumen(path: Path) -> TraceWorkload:
    jobs, racks = [], {}
    for j, obj in enumerate(_load_json_stream(path, "Rumen trace")):
        f = _Fields(obj, f"Rumen trace {path}: job {j}")
        job_id = f.get("jobID", str)
        f.where = f"Rumen trace {path}: job {j} ({job_id})"
        submit = f.get("submitTime", int)
        job = TraceJob(job_id, submit, queue=f.get("queue", str, "default"), user=f.get("user", str, ""))
        for key, out in (("mapTasks", job.maps), ("reduceTasks", job.reduces)):
            for t, tobj in enumerate(f.get(key, list, [])):
                tf = _Fields(tobj, f"{f.where} {key}[{t}]")
                attempts = [a for a in tf.get("attempts", list, []) if isinstance(a, dict)]
                ok = [a for a in attempts if str(a.get("result", "SUCCESS")).upper() == "SUCCESS"]
                if ok:
                    af = _Fields(ok[-1], f"{tf.where} attempts[{attempts.index(ok[-1])}]")
                    dur = _duration(af.where, af.get("startTime", int), af.get("finishTime", int), "startTime",
                                    "finishTime")
                else:
                    dur = _duration(tf.where, tf.get("startTime", int), tf.get("finishTime", int), "startTime",
                                    "finishTime")
                hosts = []
                for p, loc in enumerate(tf.get("preferredLocations", list, [])):
                    lf = _Fields(loc, f"{tf.where} preferredLocations[{p}]")
                    layers = lf.get("layers", list)
                    if not layers or not all(isinstance(x, str) and x for x in layers):
                        raise TraceError(f"{lf.where}: field 'layers' must be [rack, host] names")
                    host = layers[-1]
                    rack = "/" + layers[0].strip("/") if len(layers) > 1 else DEFAULT_RACK
                    hosts.append(host)
                    racks.setdefault(host, rack)
                out.append(TraceTask(dur, tuple(dict.fromkeys(hosts))))
        if not job.maps and not job.reduces:
            raise TraceError(f"{f.where}: fields 'mapTasks' and 'reduceTasks' are both empty")
        jobs.append(job)
    return TraceWorkload(jobs, [TraceNode(h, r) for h, r in racks.items()])


# ---------------------------------------------------------------- SYNTH


def _dist(f: _Fields, key: str, default=None) -> tuple[float, float]:
    d = f.get(key, dict, default)
    df = _Fields(d, f"{f.where} {key}")
    return df.get("val", float), df.get("std", float, 0.0, required=False)


def read_synth(path: Path, seed: int) -> TraceWorkload:
    objs = _load_json_stream(path, "SYNTH description")
    if len(objs) != 1:
        raise TraceError(f"SYNTH description {path}: expected one JSON object, found {len(objs)}")
    f = _Fields(objs[0], f"SYNTH description {path}")
    num_jobs = f.get("num_jobs", int)
    if not 1 <= num_jobs <= 100_000:
        raise TraceError(f"{f.where}: field 'num_jobs' must be between 1 and 100000, not {num_jobs}")
    rng = np.random.default_rng([int(seed), f.get("rand_seed", int, 0, required=False) & 0xFFFFFFFF])
    workloads = f.get("workloads", list)
    if not workloads:
        raise TraceError(f"{f.where}: field 'workloads' is empty")
    parsed = []
    for w, wobj in enumerate(workloads):
        wf = _Fields(wobj, f"{f.where} workloads[{w}]")
        weight = wf.get("workload_weight", float, 1.0, required=False)
        classes = []
        for c, cobj in enumerate(wf.get("job_classes", list)):
            cf = _Fields(cobj, f"{wf.where} job_classes[{c}]")
            tasks = []
            for t, tobj in enumerate(cf.get("tasks", list)):
                tf = _Fields(tobj, f"{cf.where} tasks[{t}]")
                kind = tf.get("type", str).lower()
                if kind not in ("map", "reduce"):
                    raise TraceError(f"{tf.where}: field 'type' is {kind!r}, not map or reduce")
                mem = _dist(tf, "max_memory", {"val": 0})[0]
                tasks.append((kind, _dist(tf, "count"), _dist(tf, "time"), int(mem)))
            if not tasks:
                raise TraceError(f"{cf.where}: field 'tasks' is empty")
            classes.append((cf.get("class_weight", float, 1.0, required=False), cf.get("user_name", str, ""),
                            tasks))
        if not classes:
            raise TraceError(f"{wf.where}: field 'job_classes' is empty")
        times = []
        for t, tobj in enumerate(wf.get("time_distribution", list, [{"time": 0, "weight": 1}])):
            tf = _Fields(tobj, f"{wf.where} time_distribution[{t}]")
            times.append((tf.get("time", float), tf.get("weight", float)))
        times.sort()
        if sum(wt for _, wt in times) <= 0:
            raise TraceError(f"{wf.where}: field 'time_distribution' has no positive weight")
        parsed.append((weight, wf.get("queue_name", str, "default"), classes, times))
    wweights = np.array([p[0] for p in parsed], float)
    if not (wweights >= 0).all() or wweights.sum() <= 0:
        raise TraceError(f"{f.where}: field 'workload_weight' must be non-negative with a positive sum")
    jobs = []
    for j in range(num_jobs):
        weight, queue, classes, times = parsed[int(rng.choice(len(parsed), p=wweights / wweights.sum()))]
        cw = np.array([c[0] for c in classes], float)
        if not (cw >= 0).all() or cw.sum() <= 0:
            raise TraceError(f"{f.where}: field 'class_weight' must be non-negative with a positive sum")
        _, user, tasks = classes[int(rng.choice(len(classes), p=cw / cw.sum()))]
        tw = np.array([wt for _, wt in times], float)
        seg = int(rng.choice(len(times), p=tw / tw.sum()))
        lo = times[seg][0]
        hi = times[seg + 1][0] if seg + 1 < len(times) else lo
        submit_ms = int(round(rng.uniform(lo, hi) * 1000)) if hi > lo else int(lo * 1000)
        job = TraceJob(f"synth_job_{j:05d}", submit_ms, queue=queue, user=user)
        for kind, (cval, cstd), (tval, tstd), mem in tasks:
            count = max(int(round(rng.normal(cval, cstd))) if cstd > 0 else int(round(cval)), 0)
            for _ in range(count):
                secs = rng.normal(tval, tstd) if tstd > 0 else tval
                (job.maps if kind == "map" else job.reduces).append(TraceTask(max(int(secs * 1000), 1), (), mem))
        if not job.maps and not job.reduces:
            job.maps.append(TraceTask(max(int(tasks[0][2][0] * 1000), 1)))  # a job needs some task
        jobs.append(job)
    jobs.sort(key=lambda jb: (jb.submit_ms, jb.job_id))
    nodes = []
    num_nodes = f.get("num_nodes", int, 0, required=False)
    if num_nodes:
        per_rack = max(f.get("nodes_per_rack", int, num_nodes, required=False), 1)
        nodes = [TraceNode(f"node{i + 1}", f"/rack{i // per_rack + 1}") for i in range(num_nodes)]
    return TraceWorkload(jobs, nodes)


# ---------------------------------------------------------------- nodes file


def read_nodes(path: str | Path) -> list[TraceNode]:
    path = Path(path)
    nodes, seen = [], set()
    for r, obj in enumerate(_load_json_stream(path, "nodes file")):
        f = _Fields(obj, f"nodes file {path}: entry {r}")
        rack = "/" + f.get("rack", str).strip("/")
        for k, nobj in enumerate(f.get("nodes", list)):
            nf = _Fields(nobj, f"{f.where} nodes[{k}]")
            host, hrack = _split_host(nf.get("node", str))
            if not host:
                raise TraceError(f"{nf.where}: field 'node' is empty")
            if host in seen:
                raise TraceError(f"{nf.where}: field 'node' names {host!r} twice")
            seen.add(host)
            mem, vc = nf.get("memory_mb", int, 0, required=False), nf.get("vcores", int, 0, required=False)
            if mem < 0 or vc < 0:
                raise TraceError(f"{nf.where}: fields 'memory_mb' and 'vcores' must be non-negative")
            nodes.append(TraceNode(host, hrack or rack, mem, vc))
    if not nodes:
        raise TraceError(f"nodes file {path}: no nodes")
    return nodes


def read_trace(path: str | Path, fmt: str, seed: int = 0, nodes: str | Path | None = None) -> TraceWorkload:
    path = Path(path)
    if fmt not in FORMATS:
        raise TraceError(f"unknown trace format {fmt!r}; formats: {', '.join(FORMATS)}")
    if not path.is_file():
        raise TraceError(f"trace {path}: no such file")
    wl = {"sls": read_sls, "rumen": read_rumen}[fmt](path) if fmt != "synth" else read_synth(path, seed)
    if nodes is not None:
        listed = read_nodes(Path(nodes))
        names = {n.host for n in listed}
        for job in wl.jobs:
            for t in job.maps + job.reduces:
                unknown = [h for h in t.hosts if h not in names]
                if unknown:
                    raise TraceError(f"trace {path}: job {job.job_id} names host {unknown[0]!r}, which the nodes "
                                     f"file {nodes} does not list")
        wl.nodes = listed
    return wl


# ---------------------------------------------------------------- multi-cluster job tables (Parquet / CSV)

JOB_TABLE_COLUMNS = ("submit_time", "executors", "duration")          # required
JOB_TABLE_OPTIONAL = ("deadline", "category", "executions", "period")  # 0 / regular / 1 / 0 by default
_CATEGORIES = {"regular": 1, "time_critical": 2, "time-critical": 2, "streaming": 3, "1": 1, "2": 2, "3": 3}


def read_job_table(path: str | Path) -> dict[str, np.ndarray]:
    """A cluster trace's job table for the multi-cluster family: one row per job with `submit_time` (steps),
    `executors` requested, `duration` (steps of one execution), optional `deadline` (steps of one execution, 0 =
    none), `category` (regular | time_critical | streaming, or 1-3), `executions` and `period` (streaming). CSV
    or Parquet (by extension). Returns the columns as numpy arrays, rows sorted by submit time."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        raise TraceError(f"job table {path}: no such file")
    try:
        table = pq.read_table(path) if path.suffix.lower() in (".parquet", ".pq") else pacsv.read_csv(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise TraceError(f"job table {path}: not readable as {'Parquet' if path.suffix.lower() in ('.parquet', '.pq') else 'CSV'} ({str(e).splitlines()[0]})") from None
    if table.num_rows == 0:
        raise TraceError(f"job table {path}: no rows")
    out: dict[str, np.ndarray] = {}
    for name in JOB_TABLE_COLUMNS + JOB_TABLE_OPTIONAL:
        if name not in table.column_names:
            if name in JOB_TABLE_COLUMNS:
                raise TraceError(f"job table {path}: column {name!r} missing (columns: "
                                 f"{', '.join(JOB_TABLE_COLUMNS)}; optional {', '.join(JOB_TABLE_OPTIONAL)})")
            continue
        col = table.column(name)
        if name == "category":
            values = []
            for i, v in enumerate(col.to_pylist()):
                key = str(v).strip().lower() if v is not None else "regular"
                if key not in _CATEGORIES:
                    raise TraceError(f"job table {path}: row {i}: column 'category' is {v!r}, not regular, "
                                     "time_critical or streaming")
                values.append(_CATEGORIES[key])
            out[name] = np.asarray(values, np.int64)
            continue
        try:
            arr = np.asarray(col.to_pylist(), dtype=float)
        except (TypeError, ValueError):
            raise TraceError(f"job table {path}: column {name!r} is not numeric") from None
        bad = np.flatnonzero(~np.isfinite(arr) | (arr < 0))
        if bad.size:
            raise TraceError(f"job table {path}: row {int(bad[0])}: column {name!r} is {float(arr[bad[0]]):g}, not a "
                             "non-negative number")
        if name in ("executors", "duration", "executions") and (arr < 1).any():
            i = int(np.flatnonzero(arr < 1)[0])
            raise TraceError(f"job table {path}: row {i}: column {name!r} must be at least 1, not {arr[i]:g}")
        out[name] = np.rint(arr).astype(np.int64)
    order = np.argsort(out["submit_time"], kind="stable")
    return {k: v[order] for k, v in out.items()}
