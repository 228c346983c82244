"""The batched Schedule path: many node heartbeats in one call, the asks sent once (yarnrl.v1 ScheduleBatch).

One gRPC call per node heartbeat costs the engine ~170-350 us of Python gRPC machinery for ~20 us of decision work
(benchmarks/engine_batching.py); at 10,000 nodes and 1 heartbeat/s that is more than the machine has. A batch
carries N heartbeats and the asks once, so the framework's cost is shared by N decisions.

Meaning (yarn_plugin/README.md, "Batched engine path"): the nodes of a batch are decided one after another, in
the order sent, each exactly as a ScheduleRequest for that node whose asks are the batch's asks less what the nodes
before it in the batch were given, booked as YARN books them (a node-local container uses one of the host, the rack
and the "*" count; rack-local the rack and "*"; off-switch "*"), with only the node's own host and rack entries
(as the plugin sends a single heartbeat), only the asks of the node's partition and only asks with containers
left. So one answer never hands the same outstanding container to two nodes, and the engine's per-heartbeat state
(missed scheduling opportunities, for Delay, ACL and CLQLMRS) counts every node as one heartbeat, in order. Each
node goes through Engine.schedule_logged like a single heartbeat: the same policy call, safety clip, opportunity
counts, learner trace, decision id, decision log and metrics.

Bad input is refused where it is: a malformed node gets a refusal of its own (INVALID_ARGUMENT naming the node and
the field) and the other nodes are decided; a malformed ask is left out of every decision and named in
`refused_asks`; a batch past the limits (MAX_BATCH_NODES, codec.MAX_ASKS, MAX_BATCH_LOCALITY) is refused whole.

Where it pays, the per-ask work is done once per batch with numpy instead of once per node in Python: asks are
decoded once, each node's view of an ask (its host and rack entries) is built once per change of the ask's
counts and shared by the nodes that see the same one, and a node on which no ask can fit (its free memory is below
every live ask's: no resource calculator fits a container in less memory than it asks for) is answered "nothing"
without calling a policy that declares it decides nothing there (Policy.idle_without_room).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np
from google.protobuf.message import DecodeError

from policy_engine.codec import (
    MAX_ASKS,
    InvalidRequest,
    _ask,
    _assignment_bytes,
    _cluster,
    _node,
    _string_field,
    _varint,
)
from policy_engine.proto import pb
from policy_engine.policy import ObservationMismatch
from policy_engine.types import (
    ANY,
    Ask,
    Assignment,
    ClusterSummary,
    Locality,
    LocalityRequest,
    Node,
    ScheduleObservation,
)

MAX_BATCH_NODES = 10_000
MAX_BATCH_LOCALITY = 2_000_000  # locality entries over all asks of one batch
# The server hands the event loop back after this much decision work inside one batch, so health checks, GetInfo
# and other calls are answered while a large batch is decided.
YIELD_EVERY_S = 0.002

_NODE_LOCAL = (Locality.NODE_LOCAL, Locality.CACHE_LOCAL)


class BatchRefused(InvalidRequest):
    """The whole batch is refused (past a limit, or not a ScheduleBatchRequest)."""


@dataclass(slots=True)
class BatchAsk:
    """One ask of a batch, with the counts that the nodes decided so far have left."""

    ask: Ask                       # as decoded (whole locality list of the batch); never handed to a policy
    index: int                     # among the batch's valid asks
    partition: str
    any: int                       # outstanding containers ("*" count)
    any_relax: bool
    entries: dict[str, tuple[int, bool]]  # host, node id or rack -> (containers asked for there, relax_locality)
    names: int                     # locality_names as a node view carries it
    version: int = 0               # bumped whenever a count changes: node views of an older version are stale


@dataclass(slots=True)
class NodeResult:
    node_id: str
    request_id: str = ""
    decision_id: str = ""
    assignments: list[Assignment] = field(default_factory=list)
    refusal: str = ""              # INVALID_ARGUMENT message when the node was refused


@dataclass(slots=True)
class ScheduleBatch:
    """A decoded ScheduleBatchRequest. `nodes[k]` is None where node k was refused (`node_errors[k]` says why)."""

    nodes: list[Node | None]
    node_ids: list[str]
    node_partitions: list[str]
    asks: list[BatchAsk]
    cluster: ClusterSummary = field(default_factory=ClusterSummary)
    batch_id: str = ""
    request_ids: list[str] = field(default_factory=list)
    node_errors: dict[int, str] = field(default_factory=dict)
    ask_errors: list[tuple[int, str, str]] = field(default_factory=list)  # (index, ask_id, message)


@dataclass(slots=True)
class BatchDecision:
    batch_id: str
    results: list[NodeResult]
    refused_asks: list[tuple[int, str, str]]
    idle_nodes: int = 0            # answered "nothing fits" without a policy call


# ---------------------------------------------------------------- decoding


def batch_ask(ask: Ask, index: int, partition: str) -> BatchAsk:
    entries: dict[str, tuple[int, bool]] = {}
    any_count, any_relax = ask.num_containers, ask.relax_locality
    for lr in ask.locality:
        name = lr.resource_name
        if name == ANY:
            any_count, any_relax = min(any_count, lr.num_containers), lr.relax_locality
        else:
            entries[name] = (lr.num_containers, lr.relax_locality)
    return BatchAsk(ask, index, partition, any_count, any_relax, entries, ask.locality_names or len(entries))


def decode_batch(req: pb.ScheduleBatchRequest) -> ScheduleBatch:
    """Validate and decode; raises BatchRefused when the batch is past a limit, and records malformed nodes and asks
    in the result instead of raising."""
    n_nodes, n_asks = len(req.nodes), len(req.asks)
    if n_nodes > MAX_BATCH_NODES:
        raise BatchRefused(f"nodes: {n_nodes} nodes exceed the limit of {MAX_BATCH_NODES} per ScheduleBatch call "
                           "(GetInfoResponse.max_batch_nodes): send smaller batches")
    if n_asks > MAX_ASKS:
        raise BatchRefused(f"asks: {n_asks} asks exceed the limit of {MAX_ASKS} per ScheduleBatch call "
                           "(GetInfoResponse.max_batch_asks)")
    entries = sum(len(a.locality) for a in req.asks)
    if entries > MAX_BATCH_LOCALITY:
        raise BatchRefused(f"asks: {entries} locality entries in all exceed the limit of {MAX_BATCH_LOCALITY} per "
                           "ScheduleBatch call: send each ask's entries for the batch's hosts and racks only")
    if req.request_ids and len(req.request_ids) != n_nodes:
        raise BatchRefused(f"request_ids: {len(req.request_ids)} ids for {n_nodes} nodes (send one per node, "
                           "or none)")
    batch = ScheduleBatch([], [], [], [], batch_id=req.batch_id, request_ids=list(req.request_ids))
    seen: set[str] = set()
    for k, n in enumerate(req.nodes):
        node_id = n.node_id
        batch.node_ids.append(node_id)
        batch.node_partitions.append(n.partition)
        try:
            if node_id in seen:
                raise InvalidRequest(f"node.node_id: {node_id!r} is already node {batch.node_ids.index(node_id)} "
                                     "of this batch (one heartbeat per node per batch)")
            node = _node(n)
            seen.add(node_id)
        except InvalidRequest as e:
            batch.nodes.append(None)
            batch.node_errors[k] = f"nodes[{k}] (node_id {node_id!r}): {e}"
            continue
        batch.nodes.append(node)
    ids: set[str] = set()
    for i, a in enumerate(req.asks):
        try:
            ask = _ask(a, i, ids)
        except InvalidRequest as e:
            batch.ask_errors.append((i, a.ask_id, str(e)))
            continue
        ids.add(ask.ask_id)
        batch.asks.append(batch_ask(ask, len(batch.asks), a.partition))
    try:
        batch.cluster = _cluster(req.cluster)
    except InvalidRequest as e:
        raise BatchRefused(str(e)) from None
    return batch


def parse_batch_request(data: bytes) -> pb.ScheduleBatchRequest:
    try:
        return pb.ScheduleBatchRequest.FromString(data)
    except DecodeError as e:
        raise BatchRefused(f"not a yarnrl.v1.ScheduleBatchRequest ({e})") from None


# ---------------------------------------------------------------- deciding


class BatchScheduler:
    """Decides ScheduleBatch requests on an Engine (policy_engine.engine), one node at a time through
    Engine.schedule_logged, with the batch's asks booked between nodes."""

    def __init__(self, engine):
        self.engine = engine

    def decide(self, batch: ScheduleBatch) -> BatchDecision:
        """In-process: the whole batch at once."""
        gen = self.steps(batch)
        while True:
            try:
                next(gen)
            except StopIteration as stop:
                return stop.value

    def steps(self, batch: ScheduleBatch, yield_every_s: float = YIELD_EVERY_S) -> Iterator[None]:
        """A generator that decides the batch, yielding after every `yield_every_s` of work (so an asyncio caller
        can let other calls run), and returns the BatchDecision."""
        engine = self.engine
        policy = engine.policy
        idle_ok = getattr(policy, "idle_without_room", False)
        asks = batch.asks
        n_asks = len(asks)
        ask_mem = np.fromiter((b.ask.resource.memory_mb for b in asks), dtype=np.int64, count=n_asks)
        live = np.fromiter((b.any > 0 for b in asks), dtype=bool, count=n_asks)
        by_id = {b.ask.ask_id: b for b in asks}
        partitions = {b.partition for b in asks}
        # asks by partition, in request order (a node sees only its partition's asks)
        part_index = {p: np.fromiter((i for i, b in enumerate(asks) if b.partition == p), dtype=np.int64)
                      for p in partitions}
        views: dict[tuple, Ask] = {}
        request_ids = batch.request_ids
        results: list[NodeResult] = []
        idle = 0
        t_next = time.perf_counter() + yield_every_s
        for k, node in enumerate(batch.nodes):
            rid = request_ids[k] if request_ids else ""
            if node is None:
                results.append(NodeResult(batch.node_ids[k], rid, refusal=batch.node_errors[k]))
                continue
            idx = part_index.get(batch.node_partitions[k])
            if idx is None or not idx.size:
                chosen = idx if idx is not None else np.zeros(0, np.int64)
            else:
                chosen = idx[live[idx]]
            if idle_ok and (not chosen.size or ask_mem[chosen].min() > node.unallocated.memory_mb):
                # No live ask fits even by memory: a policy that declares it decides nothing here is not called
                # (its answer would be empty and the opportunity counts unchanged).
                results.append(NodeResult(node.node_id, rid, engine.next_decision_id()))
                idle += 1
                continue
            host, node_id, rack = node.host, node.node_id, node.rack
            node_asks = []
            for i in chosen.tolist():
                b = asks[i]
                e = b.entries
                if e:
                    h = e.get(host)
                    hc = h[0] if h is not None else 0
                    if node_id in e:
                        hc = max(hc, e[node_id][0])
                    r = e.get(rack) if rack != host else None
                else:
                    hc, r = 0, None
                # nodes without an entry of their own share the view of their rack (or of no rack)
                key = (i, b.version, host if hc else None, hc, rack if r is not None else None)
                v = views.get(key)
                if v is None:
                    v = views[key] = node_view(b, host, hc, rack, r)
                node_asks.append(v)
            obs = ScheduleObservation(node, node_asks, batch.cluster, rid)
            try:
                decision, decision_id = engine.schedule_logged(obs)
            except (InvalidRequest, ObservationMismatch) as e:  # this node's request, not the batch, is wrong
                results.append(NodeResult(node_id, rid, refusal=f"nodes[{k}] (node_id {node_id!r}): {e}"))
                batch.node_errors[k] = results[-1].refusal
                continue
            for a in decision.assignments:
                book(by_id[a.ask_id], node, a.locality, a.count, live)
            results.append(NodeResult(node_id, rid, decision_id, decision.assignments))
            if time.perf_counter() >= t_next:
                yield
                t_next = time.perf_counter() + yield_every_s
        return BatchDecision(batch.batch_id, results, batch.ask_errors, idle)


def node_view(b: BatchAsk, host: str, host_count: int, rack: str, rack_entry: tuple[int, bool] | None) -> Ask:
    """The ask as the plugin sends it in a single heartbeat of this node (Snapshots.Builder): its host entry (count
    > 0), its rack entry (count > 0, or relax_locality false), the whole ask's name count, the "*" count left."""
    ask = b.ask
    kept: tuple[LocalityRequest, ...] = ()
    if host_count > 0:
        kept = (LocalityRequest(host, host_count, True),)
    if rack_entry is not None and (rack_entry[0] > 0 or not rack_entry[1]):
        kept += (LocalityRequest(rack, rack_entry[0], rack_entry[1]),)
    return Ask(ask.ask_id, ask.application_id, ask.attempt_id, ask.queue, ask.user, ask.priority,
               ask.allocation_request_id, ask.resource, b.any, kept, ask.submit_time_ms, ask.job, b.any_relax,
               locality_names=b.names)


def book(b: BatchAsk, node: Node, level: Locality, n: int, live: np.ndarray) -> None:
    """YARN's bookkeeping of n containers of one ask on this node (AppSchedulingInfo.allocate), as AskOnNode.take
    books it within one heartbeat."""
    e = b.entries
    if level in _NODE_LOCAL:
        for name in (node.host, node.node_id):
            h = e.get(name)
            if h is not None:
                e[name] = (max(h[0] - n, 0), h[1])
    if level in _NODE_LOCAL or level == Locality.RACK_LOCAL:
        r = e.get(node.rack)
        if r is not None and node.rack != node.host:
            e[node.rack] = (max(r[0] - n, 0), r[1])
    b.any = max(b.any - n, 0)
    b.version += 1
    if b.any == 0:
        live[b.index] = False


# ---------------------------------------------------------------- encoding


_POLICY_TAIL: dict[tuple[str, str], bytes] = {}


def _refusal_bytes(tag: int, message: str, code: int = 3) -> bytes:
    body = b"\x08" + _varint(code) + _string_field(0x12, message)
    return bytes((tag,)) + _varint(len(body)) + body


def encode_batch_decision_bytes(decision: BatchDecision, policy: str, model_version: str) -> bytes:
    """The ScheduleBatchResponse's bytes, written directly (fields in number order, as protobuf writes them:
    tests/test_batch.py checks them against protobuf)."""
    parts = [_string_field(0x0A, decision.batch_id)]
    for r in decision.results:
        body = [_string_field(0x0A, r.node_id), _string_field(0x12, r.request_id),
                _string_field(0x1A, r.decision_id)]
        for a in r.assignments:
            body.append(b"\x22" + _assignment_bytes(a.ask_id, a.count, int(a.locality))[1:])
        if r.refusal:
            body.append(_refusal_bytes(0x2A, r.refusal))
        raw = b"".join(body)
        parts.append(b"\x12" + _varint(len(raw)) + raw)
    tail = _POLICY_TAIL.get((policy, model_version))
    if tail is None:
        tail = _POLICY_TAIL[(policy, model_version)] = _string_field(0x1A, policy) + _string_field(0x22,
                                                                                                 model_version)
    parts.append(tail)
    for index, ask_id, message in decision.refused_asks:
        body = (b"\x08" + _varint(index) if index else b"") + _string_field(0x12, ask_id) + _refusal_bytes(
            0x1A, message)
        parts.append(b"\x2A" + _varint(len(body)) + body)
    return b"".join(parts)


def decode_batch_decision(resp: pb.ScheduleBatchResponse) -> BatchDecision:
    results = [NodeResult(r.node_id, r.request_id, r.decision_id,
                          [Assignment(a.ask_id, a.count, Locality(a.locality)) for a in r.assignments],
                          r.refusal.message if r.HasField("refusal") else "")
               for r in resp.results]
    return BatchDecision(resp.batch_id, results,
                         [(x.index, x.ask_id, x.refusal.message) for x in resp.refused_asks])


def encode_batch(nodes: list[Node], asks: list[Ask], cluster: ClusterSummary, batch_id: str = "",
                 request_ids: list[str] | None = None, node_partitions: list[str] | None = None,
                 ask_partitions: list[str] | None = None) -> pb.ScheduleBatchRequest:
    """A ScheduleBatchRequest from observation objects (the emulator, tests, benchmarks): nodes, then the asks once."""
    from policy_engine.codec import encode_schedule

    req = pb.ScheduleBatchRequest(batch_id=batch_id, request_ids=request_ids or [])
    for k, n in enumerate(nodes):
        one = encode_schedule(ScheduleObservation(n, [], ClusterSummary()))
        m = req.nodes.add()
        m.CopyFrom(one.node)
        if node_partitions:
            m.partition = node_partitions[k]
    full = encode_schedule(ScheduleObservation(Node("-"), asks, cluster))
    req.asks.extend(full.asks)
    if ask_partitions:
        for m, p in zip(req.asks, ask_partitions):
            m.partition = p
    req.cluster.CopyFrom(full.cluster)
    return req
