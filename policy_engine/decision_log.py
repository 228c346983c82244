"""The decision log: one Parquet row per decision, and the Report events beside it, written off the decision path.

`policy-engine serve --decision-log DIR` and the emulator's `--decision-log DIR` write the same two tables, so a
log recorded from a real ResourceManager and one recorded in the emulator are read, replayed (`emulator replay`)
and learned from (`emulator train --from-log`) alike.

Layout of DIR (one writer = one stem; several writers may share a directory):
    decisions-<stem>-<n>.parquet    one row per decision (schema DECISIONS_SCHEMA)
    events-<stem>-<n>.parquet       one row per Report event (schema EVENTS_SCHEMA), joinable on decision_id
A file is written as `<name>.parquet.inprogress` and renamed when it is closed (rotation, shutdown), so a
`*.parquet` file is always complete. Both schemas carry their version in the Arrow metadata
(`yarnrl.decision_log.schema_version`); readers refuse a version they do not know.

Like the online learner's queue (policy_engine.learning), the writer never blocks a decision: the engine appends
a snapshot of what it decided to a bounded deque and goes on; a thread turns snapshots into rows and writes them
in row groups. When the queue is full (the disk stalls, the writer falls behind) the snapshot is dropped and
counted (`dropped`, and yarnrl_decision_log_dropped_total on the engine's metrics). `threaded=False` builds and
writes rows in the caller's thread instead (the emulator's in-process runs: deterministic, nothing dropped).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from policy_engine.extras import require

require("pyarrow", extra="decisionlog", feature="the decision log (--decision-log, emulator replay)")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from policy_engine.codec import split_head  # noqa: E402
from policy_engine.locality import AskOnNode  # noqa: E402
from policy_engine.types import (  # noqa: E402
    Event,
    Locality,
    RouteDecision,
    RouteObservation,
    ScheduleDecision,
    ScheduleObservation,
)

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
VERSION_KEY = b"yarnrl.decision_log.schema_version"
TABLE_KEY = b"yarnrl.decision_log.table"
DEFAULT_CAPACITY = 10_000
DEFAULT_ROTATE_MB = 64.0
DEFAULT_BATCH_ROWS = 1024


class DecisionLogError(ValueError):
    """A log directory that cannot be read as a decision log (missing, empty, another schema version)."""


_ASK = pa.struct([
    ("ask_id", pa.string()),
    ("application_id", pa.string()),
    ("priority", pa.int32()),
    ("memory_mb", pa.int64()),
    ("vcores", pa.int32()),
    ("num_containers", pa.int32()),
    ("scheduling_opportunities", pa.int32()),   # heartbeats offered since its last local container (the engine's)
    ("relax_locality", pa.bool_()),
    ("host_request", pa.int32()),                # containers asked for on this node's host
    ("rack_request", pa.int32()),                # ... on this node's rack
    ("best_locality", pa.int8()),                # best level placeable on this node now (Locality; 0: none)
    ("input_blocks", pa.int32()),                # HDFS blocks of the job's input
    ("blocks_on_node", pa.int32()),              # ... with a replica on this node
    ("blocks_cached_on_node", pa.int32()),       # ... cached on this node
    ("blocks_on_rack", pa.int32()),              # ... with a replica on this node's rack
])
_ASSIGNMENT = pa.struct([("ask_id", pa.string()), ("count", pa.int32()), ("locality", pa.int8())])
_JOB = pa.struct([
    ("job_id", pa.string()), ("category", pa.int8()), ("executor_runtime", pa.float64()),
    ("deadline", pa.float64()), ("duration", pa.float64()), ("submit_time", pa.float64()),
    ("mean_request", pa.float64()),
])
_CLUSTER = pa.struct([
    ("cluster_id", pa.int32()), ("capacity", pa.int64()), ("available", pa.int64()), ("queued_jobs", pa.int32()),
    ("missed_deadlines", pa.int32()), ("hetero_factor", pa.float64()),
])


def _schema(fields: list[tuple[str, pa.DataType]], table: str) -> pa.Schema:
    return pa.schema(fields, metadata={VERSION_KEY: str(SCHEMA_VERSION).encode(), TABLE_KEY: table.encode()})


# The documented schema (docs/decision-log.md): change it only with SCHEMA_VERSION.
DECISIONS_SCHEMA = _schema([
    ("writer", pa.string()),                 # the engine (process) that logged it: its file stem
    ("seq", pa.int64()),                     # 1, 2, ... per writer, in decision order (a gap: a dropped row)
    ("time_ms", pa.int64()),                 # wall clock when the decision was made (Unix ms)
    ("request_id", pa.string()),
    ("decision_id", pa.string()),            # as in the response; Report events name it
    ("rpc", pa.string()),                    # "schedule" | "route"
    ("policy", pa.string()),
    ("model_version", pa.string()),
    ("model_checksum", pa.string()),
    ("latency_us", pa.float64()),            # inside the engine: decode/annotate excluded, policy + clip included
    # Schedule: the node heartbeat
    ("node_id", pa.string()),
    ("host", pa.string()),
    ("rack", pa.string()),
    ("node_free_memory_mb", pa.int64()),
    ("node_free_vcores", pa.int32()),
    ("node_total_memory_mb", pa.int64()),
    ("node_total_vcores", pa.int32()),
    ("node_running", pa.int32()),
    ("asks", pa.list_(_ASK)),
    ("assignments", pa.list_(_ASSIGNMENT)),  # the decision after the engine's safety clip
    ("containers", pa.int32()),              # containers assigned in all
    # Route: the job buffer and the clusters (or a DSRAP manager's step)
    ("jobs", pa.list_(_JOB)),
    ("clusters", pa.list_(_CLUSTER)),
    ("route_job_index", pa.int32()),
    ("route_cluster_id", pa.int32()),
    ("manager_cluster_id", pa.int32()),      # DSRAP: the manager deciding (null otherwise)
    ("task_node", pa.list_(pa.int64())),
    ("task_next", pa.list_(pa.int64())),
    # The whole observation as the protocol's request message (ScheduleRequest / RouteRequest, serialized), with
    # scheduling opportunities in `asks`: what replay decodes to decide again.
    ("observation", pa.binary()),
], "decisions")

EVENTS_SCHEMA = _schema([
    ("writer", pa.string()),
    ("time_ms", pa.int64()),                 # wall clock when the Report arrived (Unix ms)
    ("after_decision", pa.int64()),          # decisions this writer had made when the Report arrived: the event
                                             # follows the writer's decisions with seq <= after_decision
    ("decision_id", pa.string()),            # join key with decisions.decision_id ("" when the caller did not say)
    ("kind", pa.string()),                   # container_started | container_finished | job_finished | ...
    ("timestamp_ms", pa.int64()),            # the event's own time
    ("container_id", pa.string()),
    ("application_id", pa.string()),         # job_id for job events
    ("node_id", pa.string()),
    ("ask_id", pa.string()),
    ("locality", pa.int8()),
    ("runtime_ms", pa.int64()),
    ("cluster_id", pa.int32()),
    ("runtime", pa.float64()),
    ("delay_ratio", pa.float64()),
    ("succeeded", pa.bool_()),
    ("event", pa.binary()),                  # the whole event as a serialized yarnrl.v1.Event
], "events")


# ---------------------------------------------------------------- snapshots -> rows


@dataclass(slots=True)
class _Snapshot:
    """What the decision path hands over: references plus the few fields the engine mutates later."""

    time_ms: int
    obs: Any
    decision: Any
    decision_id: str
    policy: str
    model_version: str
    model_checksum: str
    latency_us: float
    opportunities: tuple[int, ...] = ()
    seq: int = 0
    raw: bytes | None = None  # the request as it arrived, when it is exactly what the policy saw


def _block_summary(ask, node) -> tuple[int, int, int, int]:
    job = ask.job
    if job is None or not job.input_blocks:
        return (len(job.input_block_ids) if job is not None else 0), 0, 0, 0
    on_node = cached = on_rack = 0
    names = (node.host, node.node_id)
    for b in job.input_blocks:
        if any(h in names for h in b.hosts):
            on_node += 1
        if any(h in names for h in b.cached_hosts):
            cached += 1
        if node.rack and node.rack in b.racks:
            on_rack += 1
    return len(job.input_blocks), on_node, cached, on_rack


def _ask_entries(obs: ScheduleObservation) -> list[dict]:
    """The asks column of one row, scheduling opportunities left at 0."""
    node = obs.node
    asks = []
    for a in obs.asks:
        view = AskOnNode(a, node)
        levels = view.best_levels()
        n_blocks, on_node, cached, on_rack = _block_summary(a, node)
        asks.append({
            "ask_id": a.ask_id, "application_id": a.application_id, "priority": a.priority,
            "memory_mb": a.resource.memory_mb, "vcores": a.resource.vcores, "num_containers": a.num_containers,
            "scheduling_opportunities": 0,
            "relax_locality": a.relax_locality, "host_request": view.host, "rack_request": view.rack,
            "best_locality": int(levels[0]) if levels else 0, "input_blocks": n_blocks, "blocks_on_node": on_node,
            "blocks_cached_on_node": cached, "blocks_on_rack": on_rack,
        })
    return asks


class AskColumnCache:
    """The asks column of a heartbeat whose asks were seen before on the same node, found by the request's bytes
    after the node (its asks and cluster, see codec.ScheduleDecoder): heartbeats repeat their asks, and building
    the column (locality counts and HDFS block summaries per ask) is most of a row's cost. Only for requests logged
    as they arrived (`raw`): equal bytes are equal asks."""

    def __init__(self, max_entries: int = 4096):
        self.max_entries = max_entries
        self._entries: dict[tuple, list[dict]] = {}
        self.hits = 0

    def asks(self, obs: ScheduleObservation, raw: bytes | None) -> list[dict]:
        head = split_head(raw) if raw is not None else None
        if head is None:
            return _ask_entries(obs)
        node = obs.node
        key = (raw[head[2]:], node.node_id, node.host, node.rack)
        cached = self._entries.get(key)
        if cached is None:
            cached = _ask_entries(obs)
            if len(self._entries) >= self.max_entries:
                self._entries.clear()
            self._entries[key] = cached
        else:
            self.hits += 1
        return [dict(entry) for entry in cached]


def schedule_row(s: _Snapshot, cache: AskColumnCache | None = None) -> dict:
    from policy_engine.codec import encode_schedule

    obs: ScheduleObservation = s.obs
    node = obs.node
    asks = cache.asks(obs, s.raw) if cache is not None else _ask_entries(obs)
    for entry, n in zip(asks, s.opportunities):
        entry["scheduling_opportunities"] = n
    decision: ScheduleDecision = s.decision
    return {
        "time_ms": s.time_ms, "request_id": obs.request_id, "decision_id": s.decision_id, "rpc": "schedule",
        "policy": s.policy, "model_version": s.model_version, "model_checksum": s.model_checksum,
        "latency_us": s.latency_us, "node_id": node.node_id, "host": node.host, "rack": node.rack,
        "node_free_memory_mb": node.unallocated.memory_mb, "node_free_vcores": node.unallocated.vcores,
        "node_total_memory_mb": node.total.memory_mb, "node_total_vcores": node.total.vcores,
        "node_running": len(node.running), "asks": asks,
        "assignments": [{"ask_id": a.ask_id, "count": a.count, "locality": int(a.locality)}
                        for a in decision.assignments],
        "containers": sum(a.count for a in decision.assignments),
        # the server hands over the request bytes it received: re-encoding costs ~10x the rest of the row
        "observation": s.raw if s.raw is not None else encode_schedule(obs).SerializeToString(),
    }


def route_row(s: _Snapshot) -> dict:
    from policy_engine.codec import encode_route

    obs: RouteObservation = s.obs
    d: RouteDecision = s.decision
    manager = obs.manager
    return {
        "time_ms": s.time_ms, "request_id": obs.request_id, "decision_id": s.decision_id, "rpc": "route",
        "policy": s.policy, "model_version": s.model_version, "model_checksum": s.model_checksum,
        "latency_us": s.latency_us,
        "jobs": [{"job_id": j.job_id, "category": int(j.category), "executor_runtime": float(j.executor_runtime),
                  "deadline": float(j.deadline), "duration": float(j.duration), "submit_time": float(j.submit_time),
                  "mean_request": float(j.request_distribution.mean()) if len(j.request_distribution) else 0.0}
                 for j in obs.jobs],
        "clusters": [{"cluster_id": c.cluster_id, "capacity": c.capacity, "available": c.available,
                      "queued_jobs": c.queued_jobs, "missed_deadlines": c.missed_deadlines,
                      "hetero_factor": float(c.hetero_factor)} for c in obs.clusters],
        "route_job_index": d.job_index, "route_cluster_id": d.cluster_id,
        "manager_cluster_id": manager.cluster_id if manager is not None else None,
        "task_node": d.task_node.tolist() if d.task_node is not None else None,
        "task_next": d.task_next.tolist() if d.task_next is not None else None,
        "observation": encode_route(obs).SerializeToString(),
    }


def event_row(time_ms: int, ev: Event, decision_id: str = "") -> dict:
    """`decision_id`: the writer's inference when the caller did not name the decision (see DecisionLog)."""
    from policy_engine.codec import encode_event

    app = getattr(ev, "application_id", "") or getattr(ev, "job_id", "")
    locality = getattr(ev, "locality", Locality.UNSPECIFIED)
    return {
        "time_ms": time_ms, "decision_id": ev.decision_id or decision_id, "kind": ev.kind, "timestamp_ms": ev.timestamp_ms,
        "container_id": getattr(ev, "container_id", ""), "application_id": app,
        "node_id": getattr(ev, "node_id", ""), "ask_id": getattr(ev, "ask_id", ""), "locality": int(locality),
        "runtime_ms": getattr(ev, "runtime_ms", 0), "cluster_id": getattr(ev, "cluster_id", 0),
        "runtime": float(getattr(ev, "runtime", 0.0)), "delay_ratio": float(getattr(ev, "delay_ratio", 0.0)),
        "succeeded": bool(getattr(ev, "succeeded", False)) if hasattr(ev, "succeeded") else None,
        "event": encode_event(ev).SerializeToString(),
    }


# ---------------------------------------------------------------- files


class ParquetFiles:
    """One table's rotating Parquet files: `<table>-<stem>-<n>.parquet`, each written as `.inprogress` first."""

    def __init__(self, directory: Path, table: str, stem: str, schema: pa.Schema, rotate_bytes: int):
        self.directory, self.table, self.stem, self.schema = directory, table, stem, schema
        self.rotate_bytes = rotate_bytes
        self.files: list[Path] = []     # completed files
        self.rows = 0
        self._n = 0
        self._sink = None
        self._writer = None
        self._path: Path | None = None

    def write(self, table: pa.Table) -> None:
        if self._writer is None:
            self._n += 1
            self._path = self.directory / f"{self.table}-{self.stem}-{self._n:05d}.parquet.inprogress"
            self._sink = pa.OSFile(str(self._path), "wb")
            self._writer = pq.ParquetWriter(self._sink, self.schema, compression="zstd")
        self._writer.write_table(table)
        self.rows += table.num_rows
        if self._sink.tell() >= self.rotate_bytes:
            self.close()

    def close(self) -> None:
        if self._writer is None:
            return
        self._writer.close()
        self._sink.close()
        final = self._path.with_suffix("")  # drop ".inprogress"
        os.replace(self._path, final)
        self.files.append(final)
        self._writer = self._sink = self._path = None


SinkFactory = Callable[[str, pa.Schema], Any]  # (table name, schema) -> object with write(pa.Table), close()


class DecisionLog:
    """`directory`: where the files go (created). `rotate_mb`: a file is closed and the next begun once it holds
    this much. `capacity`: snapshots the queue holds before it drops. `sink_factory` replaces the Parquet files
    (tests stall it)."""

    def __init__(self, directory: str | os.PathLike, rotate_mb: float = DEFAULT_ROTATE_MB,
                 capacity: int = DEFAULT_CAPACITY, threaded: bool = True, on_drop: Callable[[str], None] | None = None,
                 batch_rows: int = DEFAULT_BATCH_ROWS, flush_s: float = 1.0, stem: str | None = None,
                 sink_factory: SinkFactory | None = None, poll_s: float = 0.01):
        if capacity < 1:
            raise ValueError(f"decision log queue capacity must be >= 1, not {capacity}")
        if not rotate_mb > 0:
            raise ValueError(f"decision log rotation size must be positive, not {rotate_mb} MB")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.capacity, self.threaded, self.batch_rows, self.flush_s, self.poll_s = (
            capacity, threaded, batch_rows, flush_s, poll_s)
        self.stem = stem or f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}-{os.urandom(2).hex()}"
        rotate_bytes = int(rotate_mb * 1024 * 1024)
        if sink_factory is None:
            def sink_factory(table: str, schema: pa.Schema):
                return ParquetFiles(self.directory, table, self.stem, schema, rotate_bytes)
        self.sinks = {"decisions": sink_factory("decisions", DECISIONS_SCHEMA),
                      "events": sink_factory("events", EVENTS_SCHEMA)}
        self._schemas = {"decisions": DECISIONS_SCHEMA, "events": EVENTS_SCHEMA}
        self._rows: dict[str, list[dict]] = {"decisions": [], "events": []}
        self.dropped = {"decision": 0, "report": 0}
        self.written = {"decisions": 0, "events": 0}
        self.errors = 0
        self._on_drop = on_drop
        self._queue: deque = deque()
        self._wake = threading.Event()
        self._stopping = self._closed = False
        self._last_flush = time.monotonic()
        self._decisions = 0  # handed to the log (dropped ones included: `after_decision` counts decisions made)
        self._by_assignment: OrderedDict = OrderedDict()
        self._by_container: OrderedDict = OrderedDict()
        self._ask_cache = AskColumnCache()
        self._thread = None
        if threaded:
            self._thread = threading.Thread(target=self._run, name="decision-log", daemon=True)
            self._thread.start()

    # ------------------------------------------------------------ producer side (the decision path; never blocks)

    def schedule(self, obs: ScheduleObservation, decision: ScheduleDecision, decision_id: str, policy,
                 latency_s: float, raw: bytes | None = None) -> bool:
        """Log one Schedule decision; False when it was dropped. The asks' scheduling opportunities are copied
        now: the engine updates them in place on the next heartbeat. `raw`: the serialized request, when the
        observation is exactly its decoding (nothing annotated)."""
        return self._put("decision", _Snapshot(
            int(time.time() * 1000), obs, decision, decision_id, policy.name, policy.model_version,
            policy.model_checksum, latency_s * 1e6, tuple(a.scheduling_opportunities for a in obs.asks), raw=raw))

    def route(self, obs: RouteObservation, decision: RouteDecision, decision_id: str, policy,
              latency_s: float) -> bool:
        return self._put("decision", _Snapshot(
            int(time.time() * 1000), obs, decision, decision_id, policy.name, policy.model_version,
            policy.model_checksum, latency_s * 1e6))

    def events(self, events: Iterable[Event]) -> bool:
        return self._put("report", (int(time.time() * 1000), self._decisions, list(events)))

    def _put(self, kind: str, item) -> bool:
        if kind == "decision":
            self._decisions += 1
            item.seq = self._decisions
        if not self.threaded:
            if self._closed:
                return self._drop(kind)
            self._take(kind, item)
            self._maybe_write(force=False)
            return True
        if self._closed or self._stopping or len(self._queue) >= self.capacity:
            return self._drop(kind)
        self._queue.append((kind, item))
        return True

    def _drop(self, kind: str) -> bool:
        self.dropped[kind] += 1
        if self._on_drop is not None:
            self._on_drop(kind)
        if sum(self.dropped.values()) in (1, 1000, 100_000):  # log once, then rarely
            log.warning("decision log queue full (%d items): %s dropped so far", self.capacity, self.dropped)
        return False

    def pending(self) -> int:
        return len(self._queue)

    # ------------------------------------------------------------ consumer side

    def _take(self, kind: str, item) -> None:
        try:
            if kind == "decision":
                if isinstance(item.obs, ScheduleObservation):
                    row = schedule_row(item, self._ask_cache)
                    node = item.obs.node.node_id
                    for a in item.decision.assignments:
                        self._remember(self._by_assignment, (node, a.ask_id), item.decision_id)
                else:
                    row = route_row(item)
                row["writer"], row["seq"] = self.stem, item.seq
                self._rows["decisions"].append(row)
            else:
                t, after, events = item
                for ev in events:
                    row = event_row(t, ev, self._infer(ev))
                    row["writer"], row["after_decision"] = self.stem, after
                    self._rows["events"].append(row)
        except Exception:  # a row that cannot be built is logged and counted, never raised into a decision
            self.errors += 1
            log.exception("decision log: cannot build a %s row", kind)

    # A caller that does not name the decision in its events (the emulator) still gets joinable rows: a container
    # started on a node for an ask follows from the last decision that assigned that ask there, and its finish
    # from its start. Both maps are bounded (oldest forgotten first).
    _REMEMBER = 200_000

    def _remember(self, table: OrderedDict, key, decision_id: str) -> None:
        table[key] = decision_id
        table.move_to_end(key)
        if len(table) > self._REMEMBER:
            table.popitem(last=False)

    def _infer(self, ev: Event) -> str:
        did = ev.decision_id
        if ev.kind == "container_started":
            did = did or self._by_assignment.get((ev.node_id, ev.ask_id), "")
            if did:
                self._remember(self._by_container, ev.container_id, did)
        elif ev.kind == "container_finished" and not did:
            did = self._by_container.pop(ev.container_id, "")
        return did

    def _maybe_write(self, force: bool) -> None:
        due = force or time.monotonic() - self._last_flush >= self.flush_s
        for name, rows in self._rows.items():
            if rows and (due or len(rows) >= self.batch_rows):
                self._rows[name] = []
                try:
                    self.sinks[name].write(pa.Table.from_pylist(rows, schema=self._schemas[name]))
                    self.written[name] += len(rows)
                except Exception:
                    self.errors += 1
                    log.exception("decision log: cannot write %d %s rows", len(rows), name)
        if due:
            self._last_flush = time.monotonic()

    def _run(self) -> None:
        q = self._queue
        while True:
            self._wake.wait(self.poll_s)
            self._wake.clear()
            while q:
                self._take(*q.popleft())
                # hand the GIL back after every row: a decision waiting for it waits one row's build (~0.1 ms),
                # not Python's 5 ms switch interval
                time.sleep(0)
                if len(self._rows["decisions"]) >= self.batch_rows or len(self._rows["events"]) >= self.batch_rows:
                    self._maybe_write(force=False)
            if self._stopping and not q:
                return
            self._maybe_write(force=False)

    def flush(self, timeout: float = 30.0) -> bool:
        """Write everything handed over so far as row groups (files stay open). True when done in time."""
        if self.threaded:
            deadline = time.monotonic() + timeout
            while self._queue and time.monotonic() < deadline:
                time.sleep(0.005)
            if self._queue:
                return False
            # the thread may still hold rows it took: let it write them (flush_s=0 for one round)
            saved, self.flush_s = self.flush_s, 0.0
            try:
                self._wake.set()
                time.sleep(max(self.poll_s * 3, 0.02))
            finally:
                self.flush_s = saved
            return True
        self._maybe_write(force=True)
        return True

    def close(self, timeout: float = 30.0) -> None:
        """Write what is queued and close the files (renamed to *.parquet). Idempotent."""
        if self._closed:
            return
        if self._thread is not None:
            self._stopping = True
            self._wake.set()
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.error("decision log writer did not finish within %.0f s; %d snapshots lost", timeout,
                          len(self._queue))
                self._closed = True
                return
        self._closed = True
        self._maybe_write(force=True)
        for sink in self.sinks.values():
            try:
                sink.close()
            except Exception:
                self.errors += 1
                log.exception("decision log: cannot close a file")

    def files(self) -> list[Path]:
        return [f for s in self.sinks.values() for f in getattr(s, "files", [])]

    def stats(self) -> dict:
        return {"directory": str(self.directory), "decisions": self.written["decisions"],
                "events": self.written["events"], "dropped": dict(self.dropped), "errors": self.errors,
                "files": len(self.files())}


# ---------------------------------------------------------------- reading


def _read(directory: str | os.PathLike, table: str, schema: pa.Schema) -> pa.Table:
    d = Path(directory)
    if not d.is_dir():
        raise DecisionLogError(f"decision log {directory}: not a directory")
    paths = sorted(d.glob(f"{table}-*.parquet"))
    if not paths:
        if table == "decisions":
            raise DecisionLogError(f"decision log {directory}: no {table}-*.parquet files (an engine still writing "
                                   "keeps *.parquet.inprogress until it closes them)")
        return schema.empty_table()
    parts = []
    for p in paths:
        try:
            t = pq.read_table(p)
        except Exception as e:
            raise DecisionLogError(f"decision log file {p}: not readable as Parquet ({e})") from None
        version = (t.schema.metadata or {}).get(VERSION_KEY)
        if version is None:
            raise DecisionLogError(f"decision log file {p}: no {VERSION_KEY.decode()} in its schema metadata")
        if int(version) != SCHEMA_VERSION:
            raise DecisionLogError(f"decision log file {p}: schema version {version.decode()}, this reader knows "
                                   f"{SCHEMA_VERSION}")
        missing = [n for n in schema.names if n not in t.schema.names]
        if missing:
            raise DecisionLogError(f"decision log file {p}: column {missing[0]!r} missing (schema version "
                                   f"{SCHEMA_VERSION} has {', '.join(schema.names)})")
        parts.append(t.select(schema.names).cast(schema))
    return pa.concat_tables(parts)


def read_decisions(directory: str | os.PathLike) -> pa.Table:
    """Every decision row in the directory, files in name order (a writer's rows are in decision order)."""
    return _read(directory, "decisions", DECISIONS_SCHEMA)


def read_events(directory: str | os.PathLike) -> pa.Table:
    return _read(directory, "events", EVENTS_SCHEMA)


def decode_observation(row: dict):
    """The logged observation of one decision row, as the policy saw it (scheduling opportunities included)."""
    from policy_engine.codec import decode_route_bytes, decode_schedule_bytes

    if row["rpc"] == "schedule":
        obs = decode_schedule_bytes(row["observation"])
        for ask, logged in zip(obs.asks, row["asks"] or []):
            ask.scheduling_opportunities = logged["scheduling_opportunities"]
        return obs
    return decode_route_bytes(row["observation"])
