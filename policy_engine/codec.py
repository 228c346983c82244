"""Conversion between yarnrl.v1 messages and observation objects, with request validation.

Decoding validates: a request that a policy could not sensibly act on raises InvalidRequest with a message naming
the offending field, which the server returns as INVALID_ARGUMENT.
"""

from __future__ import annotations

import dataclasses
import math
from operator import attrgetter

import numpy as np
from google.protobuf.message import DecodeError

from policy_engine.proto import pb
from policy_engine.types import (
    ANY,
    Ask,
    Assignment,
    BlockInfo,
    Calculator,
    ClusterDemand,
    ClusterState,
    ClusterSummary,
    Container,
    EVENT_TYPES,
    Event,
    JobCategory,
    JobMetadata,
    Locality,
    LocalityRequest,
    ManagerView,
    Node,
    Resource,
    RouteDecision,
    RouteJob,
    RouteObservation,
    RouteSequence,
    ScheduleDecision,
    ScheduleObservation,
    Utilization,
)

# Bounds on one request; larger ones are refused rather than letting one caller stall the engine.
MAX_ASKS = 10_000
MAX_LOCALITY_ENTRIES = 10_000
MAX_LOCALITY_NAMES = 10_000_000  # ResourceAsk.locality_names: hosts and racks of a whole ask (a cluster's size)
MAX_ROUTE_JOBS = 1_000
MAX_CLUSTERS = 1_000
MAX_HISTORY = 10_000
MAX_CONTAINERS_PER_ASK = 1_000_000


class InvalidRequest(ValueError):
    """A request the engine refuses; the message says which field is wrong and why."""


# ---------------------------------------------------------------- helpers


def _resource(msg: pb.Resource, where: str, allow_zero: bool = True) -> Resource:
    if msg.memory_mb < 0 or msg.vcores < 0:
        raise InvalidRequest(f"{where}: negative resource (memory_mb={msg.memory_mb}, vcores={msg.vcores})")
    extra = dict(msg.extra)
    for k, v in extra.items():
        if v < 0:
            raise InvalidRequest(f"{where}: negative extra resource {k}={v}")
    if not allow_zero and msg.memory_mb == 0 and msg.vcores == 0 and not any(extra.values()):
        raise InvalidRequest(f"{where}: container resource is zero")
    return Resource(msg.memory_mb, msg.vcores, extra)


def _resource_pb(r: Resource, out: pb.Resource) -> None:
    out.memory_mb = r.memory_mb
    out.vcores = r.vcores
    if r.extra:
        out.extra.update(r.extra)


def _finite(value: float, where: str) -> float:
    if not math.isfinite(value):
        raise InvalidRequest(f"{where}: not a finite number ({value})")
    return value


def _category(value: int, where: str) -> JobCategory:
    try:
        return JobCategory(value)
    except ValueError:
        raise InvalidRequest(f"{where}: unknown job category {value}") from None


# ---------------------------------------------------------------- Schedule


def _job(msg: pb.JobMetadata, where: str) -> JobMetadata:
    blocks = tuple(
        BlockInfo(b.block_id, b.length, tuple(b.hosts), tuple(b.cached_hosts), tuple(b.racks)) for b in msg.input_blocks
    )
    return JobMetadata(
        category=_category(msg.category, f"{where}.category"),
        deadline_ms=msg.deadline_ms,
        expected_runtime_ms=msg.expected_runtime_ms,
        input_block_ids=tuple(msg.input_block_ids),
        input_blocks=blocks,
        input_paths=tuple(msg.input_paths),
        tags=dict(msg.tags),
    )


def _unallocated(msg: pb.Resource) -> Resource:
    """A node's or the cluster's unallocated resource, a dimension below zero read as none free. YARN's default
    resource calculator (FIFO's, and the CapacityScheduler's unless told otherwise) counts memory only, so a node
    of 4 vcores runs 8 containers of 512 MB and 1 vcore and reports -4 vcores unallocated; an administrator's
    smaller node resource does the same to memory. Refusing such a heartbeat (INVALID_ARGUMENT) made the plugin
    fall back on that node on every heartbeat until a container finished (FallbacksError)."""
    r = _check_resource(msg)
    if r is not None:
        return r
    extra = {k: max(v, 0) for k, v in dict(msg.extra).items()}
    return Resource(max(msg.memory_mb, 0), max(msg.vcores, 0), extra)


def _check_resource(msg: pb.Resource) -> Resource:
    """Fast path of _resource: the error message is only built when something is wrong."""
    m, v = msg.memory_mb, msg.vcores
    if m < 0 or v < 0:
        return None  # type: ignore[return-value]
    if msg.extra:
        extra = dict(msg.extra)
        if min(extra.values()) < 0:
            return None  # type: ignore[return-value]
        return Resource(m, v, extra)
    return Resource(m, v, {})


def _node(n: pb.NodeSnapshot) -> Node:
    node_id = n.node_id
    if not node_id:
        raise InvalidRequest("node.node_id: empty")
    total = _check_resource(n.total) or _resource(n.total, "node.total")
    unallocated = _unallocated(n.unallocated)
    return Node(
        node_id=node_id,
        host=n.host or node_id.split(":", 1)[0],
        rack=n.rack,
        total=total,
        unallocated=unallocated,
        running=tuple(
            Container(c.container_id, c.application_id, _resource(c.resource, f"node.running[{i}].resource"),
                      c.start_time_ms, c.expected_remaining_ms)
            for i, c in enumerate(n.running)
        ) if n.running else (),
        utilization=(
            Utilization(_finite(n.utilization.cpu, "node.utilization.cpu"), n.utilization.physical_memory_mb,
                        n.utilization.virtual_memory_mb)
            if n.HasField("utilization") else None
        ),
        timestamp_ms=n.timestamp_ms,
    )


def _ask(a: pb.ResourceAsk, i: int, seen: set[str]) -> Ask:
    ask_id = a.ask_id
    num = a.num_containers
    resource = _check_resource(a.resource)
    if (not ask_id or ask_id in seen or num < 0 or num > MAX_CONTAINERS_PER_ASK or resource is None
            or (resource.memory_mb == 0 and resource.vcores == 0 and not any(resource.extra.values()))
            or len(a.locality) > MAX_LOCALITY_ENTRIES or not 0 <= a.locality_names <= MAX_LOCALITY_NAMES):
        _raise_ask_error(a, i, seen)
    locality = tuple([LocalityRequest(lr.resource_name, lr.num_containers, lr.relax_locality)
                      for lr in a.locality])
    for lr in locality:
        if not lr.resource_name or lr.num_containers < 0:
            _raise_ask_error(a, i, seen)
    return Ask(ask_id, a.application_id, a.attempt_id, a.queue or "default", a.user, a.priority,
               a.allocation_request_id, resource, num, locality, a.submit_time_ms,
               _job(a.job, f"asks[{i}].job") if a.HasField("job") else None, a.relax_locality,
               locality_names=a.locality_names)


def _calculator(value: int) -> Calculator:
    """The request's ResourceCalculatorKind; an unknown value (a newer plugin) reads as unspecified: memory and
    vcores, the engine's rule before the field existed."""
    try:
        return Calculator(value)
    except ValueError:
        return Calculator.UNSPECIFIED


def _cluster(c: pb.ClusterSummary) -> ClusterSummary:
    calculator = _calculator(c.resource_calculator)
    total = _resource(c.total, "cluster.total")
    unallocated = _unallocated(c.unallocated)
    total.compared = unallocated.compared = int(calculator)
    return ClusterSummary(
        num_nodes=max(c.num_nodes, 0),
        num_racks=max(c.num_racks, 0),
        total=total,
        unallocated=unallocated,
        calculator=calculator,
    )


def _apply_calculator(node: Node, cluster: ClusterSummary) -> Node:
    """Fits into this node follow the RM's calculator (Resource.max_copies_in reads `compared`); the node's
    resources are decoded afresh for every request, so setting them here touches nothing shared."""
    if cluster.calculator:
        node.unallocated.compared = node.total.compared = int(cluster.calculator)
    return node


def decode_schedule(req: pb.ScheduleRequest) -> ScheduleObservation:
    if not req.HasField("node"):
        raise InvalidRequest("node: missing (a Schedule request describes one node heartbeat)")
    if len(req.asks) > MAX_ASKS:
        raise InvalidRequest(f"asks: {len(req.asks)} asks exceed the limit of {MAX_ASKS}")
    node = _node(req.node)
    asks: list[Ask] = []
    seen: set[str] = set()
    for i, a in enumerate(req.asks):
        ask = _ask(a, i, seen)
        seen.add(ask.ask_id)
        asks.append(ask)
    cluster = _cluster(req.cluster)
    return ScheduleObservation(node=_apply_calculator(node, cluster), asks=asks, cluster=cluster,
                               request_id=req.request_id, shadow=req.shadow)


def request_is_shadow(data: bytes) -> bool:
    """ScheduleRequest.shadow of a serialized request (a decision log's `observation`)."""
    return parse_schedule_request(data).shadow


def parse_schedule_request(data: bytes) -> pb.ScheduleRequest:
    try:
        return pb.ScheduleRequest.FromString(data)
    except DecodeError as e:
        raise InvalidRequest(f"not a yarnrl.v1.ScheduleRequest ({e})") from None


class ScheduleDecoder:
    """The server's hot path: a serialized ScheduleRequest straight to a ScheduleObservation.

    A node heartbeat repeats the asks of the previous ones (YARN's pending requests change only when containers
    are assigned or asked for), so each ask is decoded and validated once and looked up by its serialized bytes
    afterwards; the request is split into its top-level fields by hand (a handful of length-prefixed fields) and
    only the node, which changes every time, goes through protobuf. Any request the split does not expect
    (unknown or repeated top-level fields, a bad ask) takes the full path, decode_schedule, which also produces the
    precise error.

    One level up, the whole run of asks and the cluster summary after the node (fields 3 and 4, which protobuf
    writers put last: Java and Python serialize fields in number order) is looked up by its bytes too: when a
    heartbeat's asks and cluster are those of an earlier heartbeat, nothing after the node is split or hashed
    ask by ask. These tails are kept for the current generation of the ask cache (below), up to `max_tail_bytes`.

    Decoded asks are shared between requests: the engine writes only `scheduling_opportunities` (on every
    heartbeat, before the policy reads it) and nothing keeps an observation past its call. Callers that annotate
    asks (HDFS block locations) must use decode_schedule instead.

    The cache keeps two generations: asks looked up during the current one, and those of the previous one (moved
    forward when seen again). A new generation starts every `rotate_every` requests, or when the current one
    holds half of `max_cached`; so an ask not seen for two generations is released, and memory settles at what
    two generations of heartbeats ask for. (Clearing at 50,000 entries, as before, let finished applications'
    asks - about 10 KB each with their job metadata - pile up for hours: the soak found RSS climbing 40 MB in
    ten minutes of application churn; benchmarks/soak.py.)
    """

    def __init__(self, max_cached: int = 50_000, rotate_every: int = 10_000, max_tail_bytes: int = 16 << 20):
        self.max_cached = max_cached
        self.rotate_every = rotate_every
        self.max_tail_bytes = max_tail_bytes
        self._asks: dict[bytes, Ask] = {}
        self._previous: dict[bytes, Ask] = {}
        self._decoded = 0
        self._clusters: dict[bytes, ClusterSummary] = {}
        # the bytes after the node -> (asks, cluster), for requests whose asks and cluster come after the node
        self._tails: dict[bytes, tuple[tuple[Ask, ...], ClusterSummary]] = {}
        self._tail_bytes = 0
        self.hits = self.misses = self.tail_hits = 0

    def cached(self) -> int:
        return len(self._asks) + len(self._previous)

    def decode(self, data: bytes) -> ScheduleObservation:
        self._decoded += 1
        if self._decoded >= self.rotate_every or len(self._asks) >= self.max_cached // 2:
            self._previous, self._asks, self._decoded = self._asks, {}, 0
            self._tails.clear()  # a new generation: tails are found again (and hold no rotated-out asks for long)
            self._tail_bytes = 0
        head = split_head(data)
        if head is not None:
            request_id, node_raw, tail_at = head
            cached = self._tails.get(data[tail_at:])
            if cached is not None:
                try:
                    node = _node(pb.NodeSnapshot.FromString(node_raw))
                    rid = request_id.decode() if request_id else ""
                except (DecodeError, UnicodeDecodeError):
                    return decode_schedule(parse_schedule_request(data))
                asks, cluster = cached
                self.tail_hits += 1
                self.hits += len(asks)
                return ScheduleObservation(node=_apply_calculator(node, cluster), asks=list(asks), cluster=cluster,
                                           request_id=rid)
        parts = _split_schedule_request(data)
        if parts is None:
            return decode_schedule(parse_schedule_request(data))
        request_id, node_raw, ask_raws, cluster_raw = parts
        if node_raw is None or len(ask_raws) > MAX_ASKS:
            return decode_schedule(parse_schedule_request(data))
        cache, previous = self._asks, self._previous
        asks: list[Ask] = []
        for raw in ask_raws:
            ask = cache.get(raw)
            if ask is None:
                ask = previous.pop(raw, None)
                if ask is None:
                    self.misses += 1
                    try:
                        ask = _ask(pb.ResourceAsk.FromString(raw), 0, _NO_IDS)
                    except (InvalidRequest, DecodeError):
                        return decode_schedule(parse_schedule_request(data))  # raises, naming the ask's index
                cache[raw] = ask
            asks.append(ask)
        self.hits += len(asks)
        if len({a.ask_id for a in asks}) != len(asks):
            return decode_schedule(parse_schedule_request(data))  # a duplicate id: the full path names it
        try:
            node = _node(pb.NodeSnapshot.FromString(node_raw))
            request_id = request_id.decode() if request_id else ""
        except (DecodeError, UnicodeDecodeError):
            return decode_schedule(parse_schedule_request(data))
        cluster = self._clusters.get(cluster_raw)
        if cluster is None:
            try:
                summary = pb.ClusterSummary.FromString(cluster_raw) if cluster_raw else pb.ClusterSummary()
            except DecodeError:  # the full path names the error (found by benchmarks/fuzz.py: was INTERNAL)
                return decode_schedule(parse_schedule_request(data))
            cluster = _cluster(summary)
            if len(self._clusters) >= 1000:
                self._clusters.clear()
            self._clusters[cluster_raw] = cluster
        if head is not None:  # request id and node first, then only asks and cluster: remember the tail
            tail = data[head[2]:]
            if self._tail_bytes + len(tail) > self.max_tail_bytes:
                self._tails.clear()
                self._tail_bytes = 0
            self._tails[tail] = (tuple(asks), cluster)
            self._tail_bytes += len(tail)
        return ScheduleObservation(node=_apply_calculator(node, cluster), asks=asks, cluster=cluster,
                                   request_id=request_id)


def split_head(data: bytes):
    """(request_id, node, offset of what follows) when the request starts with an optional request id (field 1)
    and then the node (field 2), both short enough for a 1- or 2-byte length; else None."""
    pos = 0
    request_id = b""
    try:
        if data[0] == 0x0A:  # field 1, length-delimited
            size = data[1]
            pos = 2
            if size & 0x80:
                b = data[2]
                if b & 0x80:
                    return None
                size = (size & 0x7F) | (b << 7)
                pos = 3
            request_id = data[pos:pos + size]
            pos += size
        if data[pos] != 0x12:  # field 2, length-delimited
            return None
        size = data[pos + 1]
        pos += 2
        if size & 0x80:
            b = data[pos]
            if b & 0x80:
                return None
            size = (size & 0x7F) | (b << 7)
            pos += 1
    except IndexError:
        return None
    end = pos + size
    if end > len(data):
        return None
    return request_id, data[pos:end], end


_NO_IDS: frozenset[str] = frozenset()


def length_delimited_fields(data: bytes) -> list[tuple[int, int, int]] | None:
    """(field number, start, end) of every top-level field of a serialized message whose fields are all
    length-delimited (wire type 2) with one-byte tags; None when it has anything else or is cut short (the caller
    then takes protobuf's full parser)."""
    out: list[tuple[int, int, int]] = []
    pos, end = 0, len(data)
    try:
        while pos < end:
            tag = data[pos]
            pos += 1
            if tag & 7 != 2 or tag > 0x7F:
                return None
            size = data[pos]
            pos += 1
            if size & 0x80:
                size &= 0x7F
                shift = 7
                while True:
                    b = data[pos]
                    pos += 1
                    size |= (b & 0x7F) << shift
                    if not b & 0x80:
                        break
                    shift += 7
                    if shift > 35:
                        return None
            nxt = pos + size
            if nxt > end:
                return None
            out.append((tag >> 3, pos, nxt))
            pos = nxt
    except IndexError:
        return None
    return out


def _split_schedule_request(data: bytes):
    """(request_id, node, [asks], cluster) as raw bytes, or None when the message has anything else: the
    ScheduleRequest fields 1-4 are all length-delimited (wire type 2) and single-byte tags."""
    fields = length_delimited_fields(data)
    if fields is None:
        return None
    request_id = node = cluster = None
    asks: list[bytes] = []
    for field, pos, nxt in fields:
        if field == 3:
            asks.append(data[pos:nxt])
        elif field == 2 and node is None:
            node = data[pos:nxt]
        elif field == 1 and request_id is None:
            request_id = data[pos:nxt]
        elif field == 4 and cluster is None:
            cluster = data[pos:nxt]
        else:
            return None  # unknown or repeated (merged) field: the full parser handles it
    return request_id, node, asks, cluster or b""


def _raise_ask_error(a: pb.ResourceAsk, i: int, seen: set[str]) -> None:
    """Say precisely what is wrong with ask i (only called once the fast checks failed)."""
    where = f"asks[{i}]"
    if not a.ask_id:
        raise InvalidRequest(f"{where}.ask_id: empty")
    if a.ask_id in seen:
        raise InvalidRequest(f"{where}.ask_id: duplicate id {a.ask_id!r}")
    if a.num_containers < 0 or a.num_containers > MAX_CONTAINERS_PER_ASK:
        raise InvalidRequest(f"{where}.num_containers: {a.num_containers} outside [0, {MAX_CONTAINERS_PER_ASK}]")
    if len(a.locality) > MAX_LOCALITY_ENTRIES:
        raise InvalidRequest(f"{where}.locality: {len(a.locality)} entries exceed {MAX_LOCALITY_ENTRIES}")
    if not 0 <= a.locality_names <= MAX_LOCALITY_NAMES:
        raise InvalidRequest(f"{where}.locality_names: {a.locality_names} outside [0, {MAX_LOCALITY_NAMES}]")
    for j, lr in enumerate(a.locality):
        if not lr.resource_name:
            raise InvalidRequest(f"{where}.locality[{j}].resource_name: empty")
        if lr.num_containers < 0:
            raise InvalidRequest(f"{where}.locality[{j}].num_containers: negative ({lr.num_containers})")
    _resource(a.resource, f"{where}.resource", allow_zero=False)
    raise InvalidRequest(f"{where}: invalid")  # unreachable unless the checks above disagree with the fast path


def encode_schedule(obs: ScheduleObservation) -> pb.ScheduleRequest:
    req = pb.ScheduleRequest(request_id=obs.request_id, shadow=obs.shadow)
    n, node = req.node, obs.node
    n.node_id, n.host, n.rack, n.timestamp_ms = node.node_id, node.host, node.rack, node.timestamp_ms
    _resource_pb(node.total, n.total)
    _resource_pb(node.unallocated, n.unallocated)
    for c in node.running:
        m = n.running.add(container_id=c.container_id, application_id=c.application_id,
                          start_time_ms=c.start_time_ms, expected_remaining_ms=c.expected_remaining_ms)
        _resource_pb(c.resource, m.resource)
    if node.utilization is not None:
        u = node.utilization
        n.utilization.CopyFrom(pb.Utilization(cpu=u.cpu, physical_memory_mb=u.physical_memory_mb,
                                              virtual_memory_mb=u.virtual_memory_mb))
    for a in obs.asks:
        m = req.asks.add(
            ask_id=a.ask_id, application_id=a.application_id, attempt_id=a.attempt_id, queue=a.queue, user=a.user,
            priority=a.priority, allocation_request_id=a.allocation_request_id, num_containers=a.num_containers,
            submit_time_ms=a.submit_time_ms, relax_locality=a.relax_locality, locality_names=a.locality_names,
        )
        _resource_pb(a.resource, m.resource)
        for lr in a.locality:
            m.locality.add(resource_name=lr.resource_name, num_containers=lr.num_containers,
                           relax_locality=lr.relax_locality)
        if a.job is not None:
            j = a.job
            m.job.category = int(j.category)
            m.job.deadline_ms = j.deadline_ms
            m.job.expected_runtime_ms = j.expected_runtime_ms
            m.job.input_block_ids.extend(j.input_block_ids)
            m.job.input_paths.extend(j.input_paths)
            m.job.tags.update(j.tags)
            for b in j.input_blocks:
                m.job.input_blocks.add(block_id=b.block_id, length=b.length, hosts=b.hosts,
                                       cached_hosts=b.cached_hosts, racks=b.racks)
    cs = obs.cluster
    req.cluster.num_nodes, req.cluster.num_racks = cs.num_nodes, cs.num_racks
    _resource_pb(cs.total, req.cluster.total)
    _resource_pb(cs.unallocated, req.cluster.unallocated)
    if cs.calculator:
        req.cluster.resource_calculator = int(cs.calculator)
    return req


def encode_schedule_decision(decision: ScheduleDecision, request_id: str, decision_id: str, policy: str,
                             model_version: str) -> pb.ScheduleResponse:
    resp = pb.ScheduleResponse(request_id=request_id, decision_id=decision_id, policy=policy,
                               model_version=model_version)
    for a in decision.assignments:
        resp.assignments.add(ask_id=a.ask_id, count=a.count, locality=int(a.locality))
    return resp


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _string_field(tag: int, value: str) -> bytes:
    if not value:
        return b""  # proto3: a field at its default is not written
    raw = value.encode()
    return bytes((tag,)) + _varint(len(raw)) + raw


_ASSIGNMENT_CACHE: dict[tuple[str, int, int], bytes] = {}
_POLICY_FIELDS: dict[tuple[str, str], bytes] = {}


def _assignment_bytes(ask_id: str, count: int, locality: int) -> bytes:
    key = (ask_id, count, locality)
    out = _ASSIGNMENT_CACHE.get(key)
    if out is None:
        body = _string_field(0x0A, ask_id)
        if count:
            body += b"\x10" + _varint(count & 0xFFFFFFFFFFFFFFFF)  # int32: negatives as 10-byte varints
        if locality:
            body += b"\x18" + _varint(locality)
        out = b"\x1a" + _varint(len(body)) + body
        if len(_ASSIGNMENT_CACHE) >= 20_000:
            _ASSIGNMENT_CACHE.clear()
        _ASSIGNMENT_CACHE[key] = out
    return out


def encode_schedule_decision_bytes(decision: ScheduleDecision, request_id: str, decision_id: str, policy: str,
                                   model_version: str) -> bytes:
    """encode_schedule_decision(...).SerializeToString() without building the message (the server's hot path;
    the same bytes, fields in number order as protobuf writes them: tested against protobuf)."""
    tail = _POLICY_FIELDS.get((policy, model_version))
    if tail is None:
        tail = _POLICY_FIELDS[(policy, model_version)] = _string_field(0x22, policy) + _string_field(0x2A,
                                                                                                   model_version)
    parts = [_string_field(0x0A, request_id), _string_field(0x12, decision_id)]
    for a in decision.assignments:
        parts.append(_assignment_bytes(a.ask_id, a.count, int(a.locality)))
    parts.append(tail)
    return b"".join(parts)


def decode_schedule_decision(resp: pb.ScheduleResponse) -> ScheduleDecision:
    return ScheduleDecision([Assignment(a.ask_id, a.count, Locality(a.locality)) for a in resp.assignments])


# ---------------------------------------------------------------- Route


def _int_array(values, where: str) -> np.ndarray:
    arr = np.fromiter(values, dtype=np.int64)
    if arr.size and arr.min() < 0:
        raise InvalidRequest(f"{where}: negative executor count")
    return arr


MAX_MANAGER_NODES = 100_000
MAX_MANAGER_TASKS = 100_000
DSRAP_TASK_TYPES = 4   # DSRAP's ordinary, IO-intense, compute-intense, demanding


def decode_manager(m: pb.ManagerView) -> ManagerView:
    """A DSRAP manager's view; every column checked for length, finiteness and range."""
    where = "manager"
    n_nodes, n_tasks = len(m.cpu_free), len(m.task_ids)
    if n_nodes > MAX_MANAGER_NODES or n_tasks > MAX_MANAGER_TASKS:
        raise InvalidRequest(f"{where}: {n_nodes} nodes / {n_tasks} tasks exceed the limits of "
                             f"{MAX_MANAGER_NODES} / {MAX_MANAGER_TASKS}")

    def column(name: str, n: int, dtype) -> np.ndarray:
        values = getattr(m, name)
        if len(values) != n:
            raise InvalidRequest(f"{where}.{name}: {len(values)} entries, expected {n}")
        arr = np.asarray(values, dtype=dtype)
        if arr.size and (not np.isfinite(arr).all() or arr.min() < 0):
            raise InvalidRequest(f"{where}.{name}: contains a negative number, NaN or infinity")
        return arr

    nodes = {k: column(k, n_nodes, np.float64) for k in ("cpu_free", "network_free", "cpu_capacity",
                                                          "network_capacity")}
    neighbors = np.asarray(m.neighbors, dtype=np.int64)
    delays = column("transfer_delays", neighbors.size, np.int64)
    if np.unique(neighbors).size != neighbors.size or (neighbors == m.cluster_id).any():
        raise InvalidRequest(f"{where}.neighbors: duplicate ids or the manager's own cluster")
    if delays.size and delays.min() < 1:
        raise InvalidRequest(f"{where}.transfer_delays: a transfer takes at least one step")
    types = column("task_types", n_tasks, np.int64)
    if types.size and types.max() >= DSRAP_TASK_TYPES:
        raise InvalidRequest(f"{where}.task_types: {int(types.max())} is not one of the {DSRAP_TASK_TYPES} task types")
    wait = np.asarray(m.task_wait, dtype=np.int64)
    if wait.size != n_tasks:
        raise InvalidRequest(f"{where}.task_wait: {wait.size} entries, expected {n_tasks}")
    if m.transfer_limit < 0:
        raise InvalidRequest(f"{where}.transfer_limit: negative")
    order = np.argsort(neighbors, kind="stable")
    return ManagerView(
        cluster_id=m.cluster_id, cpu_free=nodes["cpu_free"], net_free=nodes["network_free"],
        cpu_capacity=nodes["cpu_capacity"], net_capacity=nodes["network_capacity"], neighbors=neighbors[order],
        delays=delays[order], task_id=np.asarray(m.task_ids, dtype=np.int64), task_type=types,
        task_cpu=column("task_cpu", n_tasks, np.float64), task_net=column("task_network", n_tasks, np.float64),
        task_utility=column("task_utility_rate", n_tasks, np.float64), task_wait=wait,
        task_hops=column("task_hops", n_tasks, np.int64), transfer_limit=m.transfer_limit,
    )


def encode_manager(v: ManagerView, out: pb.ManagerView) -> None:
    out.cluster_id = v.cluster_id
    out.cpu_free.extend(v.cpu_free.tolist())
    out.network_free.extend(v.net_free.tolist())
    out.cpu_capacity.extend(v.cpu_capacity.tolist())
    out.network_capacity.extend(v.net_capacity.tolist())
    out.neighbors.extend(v.neighbors.tolist())
    out.transfer_delays.extend(v.delays.tolist())
    out.task_ids.extend(v.task_id.tolist())
    out.task_types.extend(v.task_type.tolist())
    out.task_cpu.extend(v.task_cpu.tolist())
    out.task_network.extend(v.task_net.tolist())
    out.task_utility_rate.extend(v.task_utility.tolist())
    out.task_wait.extend(v.task_wait.tolist())
    out.task_hops.extend(v.task_hops.tolist())
    out.transfer_limit = v.transfer_limit


def decode_route(req: pb.RouteRequest) -> RouteObservation:
    if req.HasField("manager"):
        if req.jobs or req.clusters:
            raise InvalidRequest("manager: a DSRAP manager request carries no jobs or clusters")
        _finite(req.time, "time")
        return RouteObservation(jobs=[], clusters=[], time=req.time, request_id=req.request_id,
                                manager=decode_manager(req.manager))
    if not req.jobs:
        raise InvalidRequest("jobs: empty (a Route request needs at least one buffered job)")
    if not req.clusters:
        raise InvalidRequest("clusters: empty (a Route request needs at least one candidate cluster)")
    if len(req.jobs) > MAX_ROUTE_JOBS:
        raise InvalidRequest(f"jobs: {len(req.jobs)} exceed the limit of {MAX_ROUTE_JOBS}")
    if len(req.clusters) > MAX_CLUSTERS:
        raise InvalidRequest(f"clusters: {len(req.clusters)} exceed the limit of {MAX_CLUSTERS}")
    _finite(req.time, "time")
    clusters = []
    ids: set[int] = set()
    for i, c in enumerate(req.clusters):
        where = f"clusters[{i}]"
        if c.cluster_id in ids:
            raise InvalidRequest(f"{where}.cluster_id: duplicate id {c.cluster_id}")
        ids.add(c.cluster_id)
        if min(c.capacity, c.max_capacity, c.current_capacity, c.available) < 0:
            raise InvalidRequest(f"{where}: negative capacity or availability")
        if len(c.occupation_history) > MAX_HISTORY:
            raise InvalidRequest(f"{where}.occupation_history: longer than {MAX_HISTORY}")
        hist = np.asarray(c.occupation_history, dtype=np.float32)
        if hist.size and not np.isfinite(hist).all():
            raise InvalidRequest(f"{where}.occupation_history: contains NaN or infinity")
        clusters.append(ClusterState(
            cluster_id=c.cluster_id, capacity=c.capacity, max_capacity=c.max_capacity or c.capacity,
            current_capacity=c.current_capacity or c.capacity, available=c.available,
            hetero_factor=_finite(c.hetero_factor, f"{where}.hetero_factor"), occupation_history=hist,
            missed_deadlines=c.missed_deadlines, queued_jobs=c.queued_jobs, elastic=c.elastic,
        ))
    jobs = []
    for i, j in enumerate(req.jobs):
        where = f"jobs[{i}]"
        for name in ("executor_runtime", "deadline", "duration", "submit_time", "expected_hetero_factor"):
            _finite(getattr(j, name), f"{where}.{name}")
        per_cluster = []
        for k, d in enumerate(j.per_cluster):
            if d.cluster_id not in ids:
                raise InvalidRequest(f"{where}.per_cluster[{k}].cluster_id: unknown cluster {d.cluster_id}")
            per_cluster.append(ClusterDemand(
                d.cluster_id, _int_array(d.request_distribution, f"{where}.per_cluster[{k}].request_distribution"),
                _finite(d.standard_runtime, f"{where}.per_cluster[{k}].standard_runtime"),
                _finite(d.deadline, f"{where}.per_cluster[{k}].deadline"),
            ))
        jobs.append(RouteJob(
            job_id=j.job_id, category=_category(j.category, f"{where}.category"),
            request_distribution=_int_array(j.request_distribution, f"{where}.request_distribution"),
            executor_runtime=j.executor_runtime, deadline=j.deadline, duration=j.duration,
            executions=max(j.executions, 1), submit_time=j.submit_time,
            expected_hetero_factor=j.expected_hetero_factor, hetero_sensitivity=j.hetero_sensitivity,
            per_cluster=tuple(per_cluster),
        ))
    sequence = RouteSequence(req.stream_id, req.sequence) if req.HasField("sequence") else None
    return RouteObservation(jobs=jobs, clusters=clusters, time=req.time, request_id=req.request_id, sequence=sequence)


def encode_route(obs: RouteObservation) -> pb.RouteRequest:
    req = pb.RouteRequest(request_id=obs.request_id, time=obs.time)
    if obs.sequence is not None:
        req.sequence, req.stream_id = obs.sequence.index, obs.sequence.stream
    if obs.manager is not None:
        encode_manager(obs.manager, req.manager)
    for j in obs.jobs:
        m = req.jobs.add(
            job_id=j.job_id, category=int(j.category), executor_runtime=j.executor_runtime, deadline=j.deadline,
            duration=j.duration, executions=j.executions, submit_time=j.submit_time,
            expected_hetero_factor=j.expected_hetero_factor, hetero_sensitivity=j.hetero_sensitivity,
        )
        m.request_distribution.extend(j.request_distribution.tolist())
        for d in j.per_cluster:
            m.per_cluster.add(cluster_id=d.cluster_id, request_distribution=d.request_distribution.tolist(),
                              standard_runtime=d.standard_runtime, deadline=d.deadline)
    for c in obs.clusters:
        req.clusters.add(
            cluster_id=c.cluster_id, capacity=c.capacity, max_capacity=c.max_capacity,
            current_capacity=c.current_capacity, available=c.available, hetero_factor=c.hetero_factor,
            occupation_history=c.occupation_history.tolist(), missed_deadlines=c.missed_deadlines,
            queued_jobs=c.queued_jobs, elastic=c.elastic,
        )
    return req


def encode_route_decision(decision: RouteDecision, obs: RouteObservation, decision_id: str, policy: str,
                          model_version: str) -> pb.RouteResponse:
    if obs.manager is not None:
        return pb.RouteResponse(
            request_id=obs.request_id, decision_id=decision_id, cluster_id=obs.manager.cluster_id, policy=policy,
            model_version=model_version, task_node=decision.task_node.tolist(),
            task_next_cluster=decision.task_next.tolist())
    return pb.RouteResponse(
        request_id=obs.request_id, decision_id=decision_id, job_index=decision.job_index,
        job_id=obs.jobs[decision.job_index].job_id, cluster_id=decision.cluster_id, policy=policy,
        model_version=model_version,
    )


def decode_route_decision(resp: pb.RouteResponse) -> RouteDecision:
    if len(resp.task_node) or len(resp.task_next_cluster):
        return RouteDecision(resp.job_index, resp.cluster_id, np.asarray(resp.task_node, dtype=np.int64),
                             np.asarray(resp.task_next_cluster, dtype=np.int64))
    return RouteDecision(resp.job_index, resp.cluster_id)


# ---------------------------------------------------------------- Report

MAX_EVENTS = 100_000
# Fields of each event dataclass besides the two every event has, read by name from the protocol's message of the
# same kind: a field added to both (a new protocol field) needs no change here.
_EVENT_FIELDS = {kind: tuple(f for f in dataclasses.fields(cls) if f.name not in ("timestamp_ms", "decision_id"))
                 for kind, cls in EVENT_TYPES.items()}


_PLAIN, _RACK_CACHED, _LOCALITY, _TOTAL, _FLOAT = range(5)
_EVENT_SPECS: dict[str, tuple[tuple[str, int], ...]] = {}  # per kind: (field, how it is read), from the descriptor
_LOCALITIES = {int(v): v for v in Locality}


def _event_spec(kind: str, msg) -> tuple[tuple[str, int], ...]:
    spec = _EVENT_SPECS.get(kind)
    if spec is None:
        floats = {f.name for f in msg.DESCRIPTOR.fields if f.cpp_type in (f.CPPTYPE_DOUBLE, f.CPPTYPE_FLOAT)}
        special = {"rack_cached": _RACK_CACHED, "locality": _LOCALITY, "total": _TOTAL}
        spec = _EVENT_SPECS[kind] = tuple(
            (f.name, special.get(f.name, _FLOAT if f.name in floats else _PLAIN)) for f in _EVENT_FIELDS[kind])
    return spec


def decode_event(ev: pb.Event, where: str | int = "event") -> Event:
    """`where`: how errors name the event (an int i: "events[i]")."""
    kind = ev.WhichOneof("kind")
    if kind is None:
        raise InvalidRequest(f"{_where(where)}: no event kind set")
    reader = _EVENT_READERS.get(kind)
    if reader is None:
        cls = EVENT_TYPES.get(kind)
        if cls is None:  # a kind this engine's types do not know yet (a newer caller): refuse it by name
            raise InvalidRequest(f"{_where(where)}: event kind {kind!r} is not supported by this engine")
        reader = _event_reader(kind, cls, getattr(ev, kind))
    cls, getter, single, specials, positional = reader
    msg = getattr(ev, kind)
    if not specials:
        values = (getter(msg),) if single else getter(msg)
    else:
        values = [getter(msg)] if single else list(getter(msg))
        for i, name, how in specials:
            v = values[i]
            if how == _RACK_CACHED:  # optional: unset means unknown
                v = v if msg.HasField("rack_cached") else None
            elif how == _LOCALITY:
                loc = _LOCALITIES.get(v)
                if loc is None:
                    raise InvalidRequest(f"{_where(where)}.{kind}.locality: unknown locality {v}")
                v = loc
            elif how == _TOTAL:
                v = _resource(v, f"{_where(where)}.{kind}.total")
            else:
                v = _finite(v, f"{_where(where)}.{kind}.{name}")
            values[i] = v
    if not positional:  # an event class whose own fields are not all positional: by keyword
        return cls(timestamp_ms=ev.timestamp_ms, decision_id=ev.decision_id,
                   **dict(zip((name for name, _ in _event_spec(kind, msg)), values)))
    # positionally: the event dataclass's own fields (_EVENT_FIELDS[kind], in order), then the base's keywords
    return cls(*values, timestamp_ms=ev.timestamp_ms, decision_id=ev.decision_id)


# per kind: (event class, one C call reading every field, whether it is a single field, the fields read specially);
# a Report carries thousands of events per second at scale, and building a dict of keyword arguments per event cost
# about twice the rest of its decoding
_EVENT_READERS: dict[str, tuple] = {}


def _event_reader(kind: str, cls, msg) -> tuple:
    spec = _event_spec(kind, msg)
    names = [name for name, _ in spec]
    specials = tuple((i, name, how) for i, (name, how) in enumerate(spec) if how != _PLAIN)
    positional = [f.name for f in dataclasses.fields(cls) if f.init and not f.kw_only]
    read_all = attrgetter(*names) if names else (lambda m: ())
    reader = (cls, read_all, len(names) == 1, specials, positional == names)
    _EVENT_READERS[kind] = reader
    return reader


def _where(where: str | int) -> str:
    return f"events[{where}]" if isinstance(where, int) else where


def decode_events(events) -> list[Event]:
    if len(events) > MAX_EVENTS:
        raise InvalidRequest(f"events: {len(events)} exceed the limit of {MAX_EVENTS}")
    return [decode_event(ev, i) for i, ev in enumerate(events)]


def encode_event(event: Event) -> pb.Event:
    kind = event.kind
    if kind not in _EVENT_FIELDS:
        raise TypeError(f"not a feedback event: {event!r}")
    out = pb.Event(timestamp_ms=event.timestamp_ms, decision_id=event.decision_id)
    msg = getattr(out, kind)
    msg.SetInParent()  # an event kind with every field at its default is still that kind
    for f in _EVENT_FIELDS[kind]:
        v = getattr(event, f.name)
        if f.name == "total":
            _resource_pb(v, msg.total)
        elif v is None:  # an optional field left unset
            continue
        else:
            setattr(msg, f.name, int(v) if f.name == "locality" else v)
    return out


__all__ = [
    "ANY", "InvalidRequest", "decode_schedule", "encode_schedule", "encode_schedule_decision",
    "decode_schedule_decision", "decode_route", "encode_route", "encode_route_decision", "decode_route_decision", "decode_event", "decode_events",
    "encode_event",
]


# ---------------------------------------------------------------- serialized messages (the decision log's columns)


def decode_schedule_bytes(data: bytes) -> ScheduleObservation:
    """A serialized ScheduleRequest, checked and decoded as the server does."""
    return decode_schedule(parse_schedule_request(data))


def decode_route_bytes(data: bytes) -> RouteObservation:
    try:
        req = pb.RouteRequest.FromString(data)
    except DecodeError as e:
        raise InvalidRequest(f"not a RouteRequest message: {e}") from None
    return decode_route(req)


def decode_event_bytes(data: bytes) -> Event:
    try:
        ev = pb.Event.FromString(data)
    except DecodeError as e:
        raise InvalidRequest(f"not an Event message: {e}") from None
    return decode_event(ev)
