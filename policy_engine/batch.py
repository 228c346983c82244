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

Where it pays, the per-ask work is done once per batch with numpy instead of once per node in Python: the asks'
entries arrive as one columnar table read into (name x ask) matrices; asks are decoded once across batches (keyed
by their bytes); each node's view of the asks is a per-rack list kept across nodes and batches and patched where
numpy finds an ask's state changed, its "*" count read live (LiveAsk); the asks are put in FIFO order once per
batch; and a node on which no ask can fit (its free memory is below every live ask's: no resource calculator fits
a container in less memory than it asks for) is answered "nothing" without calling a policy that declares it
decides nothing there (Policy.idle_without_room).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np
from google.protobuf.message import DecodeError

from policy_engine.codec import (
    MAX_ASKS,
    MAX_CONTAINERS_PER_ASK,
    MAX_LOCALITY_NAMES,
    InvalidRequest,
    _apply_calculator,
    _ask,
    _assignment_bytes,
    _cluster,
    _node,
    _string_field,
    _varint,
    length_delimited_fields,
)
from policy_engine.proto import pb
from policy_engine.policies.fifo import _FIFO_KEY, FifoOrdered
from policy_engine.engine import OpportunityTracker
from policy_engine.policy import ObservationMismatch
from policy_engine.types import (
    ANY,
    Ask,
    Assignment,
    ClusterSummary,
    Locality,
    LocalityRequest,
    Node,
    Resource,
    ScheduleObservation,
)
from policy_engine.types import _MEMORY_ONLY

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
    """One ask of a batch, with the "*" count that the nodes decided so far have left (its host and rack counts
    are columns of the batch's LocalityTable)."""

    ask: Ask                       # as decoded, without locality entries; never handed to a policy
    index: int                     # among the batch's valid asks: its column in the LocalityTable
    partition: str
    any: int                       # outstanding containers ("*" count)
    any_relax: bool
    names: int                     # locality_names as a node view carries it
    version: int = 0               # bumped whenever a count changes
    cell: list[int] | None = None  # [any], read by this ask's LiveAsk views (BatchScheduler, live mode)


class LiveAsk(Ask):
    """A node view whose "*" count is the batch's count *now* (the cell, a list shared with the BatchAsk),
    so a container booked for one node does not make every view of the ask on every rack stale. Used only while
    nothing keeps observations past their decision (no decision log attached, no annotators editing asks).
    (Its missed-opportunity count stays a plain attribute, written per node: Delay and CLQLMRS read it for every
    ask they look at, and a property reading the batch's array cost them more than the write saves.)"""

    __slots__ = ("_cell",)

    @property
    def num_containers(self) -> int:  # type: ignore[override]
        return self._cell[0]

    @num_containers.setter
    def num_containers(self, value: int) -> None:
        pass  # the dataclass __init__ sets it; the count lives in the cell


@dataclass(slots=True)
class NodeResult:
    node_id: str
    request_id: str = ""
    decision_id: str = ""
    assignments: list[Assignment] = field(default_factory=list)
    refusal: str = ""              # INVALID_ARGUMENT message when the node was refused


class LocalityTable:
    """Host and rack counts of every ask of a batch: rows are names (hosts, node ids, racks), columns asks."""

    __slots__ = ("pos", "count", "has", "relax")

    def __init__(self, names: list[str], asks: int, ask_col: np.ndarray, name_row: np.ndarray,
                 counts: np.ndarray, relax: np.ndarray):
        self.pos = {name: k for k, name in enumerate(names)}
        shape = (len(names), asks)
        self.count = np.zeros(shape, dtype=np.int64)
        self.has = np.zeros(shape, dtype=bool)
        self.relax = np.ones(shape, dtype=bool)
        if ask_col.size:
            self.count[name_row, ask_col] = counts
            self.has[name_row, ask_col] = True
            self.relax[name_row, ask_col] = relax


@dataclass(slots=True)
class ScheduleBatch:
    """A decoded ScheduleBatchRequest. `nodes[k]` is None where node k was refused (`node_errors[k]` says why)."""

    nodes: list[Node | None]
    node_ids: list[str]
    node_partitions: list[str]
    asks: list[BatchAsk]
    table: LocalityTable | None = None
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


class AskCache:
    """Decoded asks by their serialized bytes, two generations (as codec.ScheduleDecoder): an ask that did not
    change since an earlier batch is neither decoded nor validated again, and keeps its identity, so the node
    views built from it (BatchScheduler) are found again too."""

    def __init__(self, max_cached: int = 50_000):
        self.max_cached = max_cached
        self.current: dict[bytes, Ask] = {}
        self.previous: dict[bytes, Ask] = {}
        # an ask's bytes as received -> (its decoded Ask, partition, count, name count), all checked: most asks of
        # a batch come again byte for byte in the next (the plugin's cycle is ~10 ms), and a dict lookup costs less
        # than the walk over their fields and the reads of the message's per-batch fields
        self.exact: dict[bytes, tuple[Ask, str, int, int]] = {}

    def put_exact(self, raw: bytes, entry: tuple[Ask, str, int, int]) -> None:
        if len(self.exact) >= self.max_cached:
            self.exact.clear()
        self.exact[raw] = entry

    def get(self, raw: bytes) -> Ask | None:
        ask = self.current.get(raw)
        if ask is None:
            ask = self.previous.pop(raw, None)
            if ask is not None:
                self.current[raw] = ask
        return ask

    def put(self, raw: bytes, ask: Ask) -> None:
        if len(self.current) >= self.max_cached // 2:
            self.previous, self.current = self.current, {}
        self.current[raw] = ask


def _add_own_locality(ask: Ask, c: int, name_pos: dict[str, int], names: list[str], own: list) -> None:
    """The locality entries sent inside ask `c` (the per-heartbeat layout) as (ask, name row, count, relax)."""
    for lr in ask.locality:
        row = name_pos.get(lr.resource_name)
        if row is None:
            row = name_pos[lr.resource_name] = len(names)
            names.append(lr.resource_name)
        own.append((c, row, lr.num_containers, lr.relax_locality))


def decode_batch(req: pb.ScheduleBatchRequest, cache: AskCache | None = None,
                 raw_asks: list[bytes] | None = None, fast: bool = True) -> ScheduleBatch:
    """Validate and decode; raises BatchRefused when the batch is past a limit or its locality table is
    inconsistent, and records malformed nodes and asks in the result instead of raising. `raw_asks`: each ask's
    bytes as received (split_batch_asks), the cache's keys; without them an ask is serialized again for its key."""
    n_nodes, n_asks = len(req.nodes), len(req.asks)
    if n_nodes > MAX_BATCH_NODES:
        raise BatchRefused(f"nodes: {n_nodes} nodes exceed the limit of {MAX_BATCH_NODES} per ScheduleBatch call "
                           "(GetInfoResponse.max_batch_nodes): send smaller batches")
    if n_asks > MAX_ASKS:
        raise BatchRefused(f"asks: {n_asks} asks exceed the limit of {MAX_ASKS} per ScheduleBatch call "
                           "(GetInfoResponse.max_batch_asks)")
    col = req.locality
    n_table = len(col.ask_index)
    entries = sum(len(a.locality) for a in req.asks) + n_table
    if entries > MAX_BATCH_LOCALITY:
        raise BatchRefused(f"locality: {entries} locality entries in all exceed the limit of {MAX_BATCH_LOCALITY} "
                           "per ScheduleBatch call: send the asks' entries for the batch's hosts and racks only")
    if not (len(col.name_index) == len(col.num_containers) == len(col.relax_locality) == n_table):
        raise BatchRefused(f"locality: columns of different lengths (ask_index {n_table}, name_index "
                           f"{len(col.name_index)}, num_containers {len(col.num_containers)}, relax_locality "
                           f"{len(col.relax_locality)})")
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
    # asks: decoded once (or found in the cache), their entries gathered into one table
    ids: set[str] = set()
    column = np.full(n_asks, -1, dtype=np.int64)  # request index -> column (-1: refused)
    names: list[str] = list(col.names)
    name_pos = {name: k for k, name in enumerate(names)}
    own: list[tuple[int, int, int, bool]] = []  # (column, name row, count, relax) from asks' own entries
    refused: dict[int, str] = {}
    exact = cache.exact if cache is not None and fast else None
    for i, a in enumerate(req.asks):
        if exact is not None:
            raw = raw_asks[i] if raw_asks is not None else a.SerializeToString()
            hit = exact.get(raw)
            if hit is not None and hit[0].ask_id not in ids:
                ask, partition, num, names_count = hit
                ids.add(ask.ask_id)
                c = len(batch.asks)
                column[i] = c
                batch.asks.append(BatchAsk(ask, c, partition, num, ask.relax_locality, names_count))
                _add_own_locality(ask, c, name_pos, names, own)
                continue
        try:
            raw = None if cache is None else raw_asks[i] if raw_asks is not None else a.SerializeToString()
            key = None if raw is None else stable_ask_key(raw)
            ask = cache.get(key) if key is not None else None
            if ask is None:
                ask = _ask(a, i, _NO_IDS)
                if key is not None:
                    cache.put(key, ask)
            elif not (0 <= a.num_containers <= MAX_CONTAINERS_PER_ASK
                      and 0 <= a.locality_names <= MAX_LOCALITY_NAMES):
                _ask(a, i, _NO_IDS)  # raises, naming the field
            if ask.ask_id in ids:
                raise InvalidRequest(f"asks[{i}].ask_id: duplicate id {ask.ask_id!r}")
        except InvalidRequest as e:
            refused[i] = str(e)
            continue
        ids.add(ask.ask_id)
        c = len(batch.asks)
        column[i] = c
        # the count and the name count from this message (a cached ask may have been decoded with others)
        batch.asks.append(BatchAsk(ask, c, a.partition, a.num_containers, ask.relax_locality, a.locality_names))
        if exact is not None:
            cache.put_exact(raw, (ask, a.partition, a.num_containers, a.locality_names))
        _add_own_locality(ask, c, name_pos, names, own)
    ask_col = np.zeros(0, dtype=np.int64)
    name_row = counts = np.zeros(0, dtype=np.int64)
    relax = np.zeros(0, dtype=bool)
    if n_table:
        if fast:  # numpy reads protobuf's repeated scalars as a sequence, ~15x faster than element by element
            ask_index = np.array(col.ask_index, dtype=np.int64)
            name_row = np.array(col.name_index, dtype=np.int64)
            counts = np.array(col.num_containers, dtype=np.int64)
            relax = np.array(col.relax_locality, dtype=bool)
        else:
            ask_index = np.fromiter(col.ask_index, dtype=np.int64, count=n_table)
            name_row = np.fromiter(col.name_index, dtype=np.int64, count=n_table)
            counts = np.fromiter(col.num_containers, dtype=np.int64, count=n_table)
            relax = np.fromiter(col.relax_locality, dtype=bool, count=n_table)
        bad = np.flatnonzero((ask_index < 0) | (ask_index >= n_asks) | (name_row < 0)
                             | (name_row >= len(col.names)))
        if bad.size:
            j = int(bad[0])
            raise BatchRefused(f"locality[{j}]: ask_index {int(ask_index[j])} or name_index {int(name_row[j])} "
                               f"outside the batch's {n_asks} asks / {len(col.names)} names")
        empty = [k for k, name in enumerate(col.names) if not name]
        bad_entry = counts < 0
        if empty or not fast:
            bad_entry |= np.isin(name_row, empty)
        for j in np.flatnonzero(bad_entry).tolist():  # this ask only
            i = int(ask_index[j])
            what = (f"name_index {int(name_row[j])}: empty name" if not col.names[int(name_row[j])]
                    else f"num_containers: negative ({int(counts[j])})")
            refused.setdefault(i, f"asks[{i}]: locality[{j}].{what}")
        ask_col = column[ask_index]
    if own:
        o = np.asarray(own, dtype=np.int64)
        ask_col = np.concatenate([ask_col, o[:, 0]])
        name_row = np.concatenate([name_row, o[:, 1]])
        counts = np.concatenate([counts, o[:, 2]])
        relax = np.concatenate([relax, o[:, 3].astype(bool)])
    if refused:  # asks refused by a bad table entry lose their column too
        for i in refused:
            c = int(column[i])
            if c >= 0:
                column[i] = -1
                batch.asks[c] = None  # type: ignore[call-overload]
        keep = [b for b in batch.asks if b is not None]
        remap = np.full(len(batch.asks), -1, dtype=np.int64)
        for new_c, b in enumerate(keep):
            remap[b.index] = new_c
            b.index = new_c
        batch.asks = keep
        mapped = np.full_like(ask_col, -1)
        valid = ask_col >= 0  # entries of asks refused earlier are -1 already (not an index from the end)
        mapped[valid] = remap[ask_col[valid]]
        ask_col = mapped
        batch.ask_errors = [(i, req.asks[i].ask_id, refused[i]) for i in sorted(refused)]
    ok = ask_col >= 0
    if not ok.all():
        ask_col, name_row, counts, relax = ask_col[ok], name_row[ok], counts[ok], relax[ok]
    # "*" entries lower the ask's own count and carry ANY's relax (as AskOnNode reads them)
    star = name_pos.get(ANY)
    if star is not None:
        is_star = name_row == star
        for c, n, r in zip(ask_col[is_star].tolist(), counts[is_star].tolist(), relax[is_star].tolist()):
            b = batch.asks[c]
            b.any, b.any_relax = min(b.any, n), r
        keep = ~is_star
        ask_col, name_row, counts, relax = ask_col[keep], name_row[keep], counts[keep], relax[keep]
    table = LocalityTable(names, len(batch.asks), ask_col, name_row, counts, relax)
    if star is not None:
        table.pos.pop(ANY, None)
    unnamed = [b for b in batch.asks if not b.names]
    if unnamed:  # no locality_names sent: the names this batch carries for the ask
        per_ask = table.has.sum(axis=0)
        for b in unnamed:
            b.names = int(per_ask[b.index])
    batch.table = table
    try:
        batch.cluster = _cluster(req.cluster)
    except InvalidRequest as e:
        raise BatchRefused(str(e)) from None
    for node in batch.nodes:  # fits follow the RM's calculator (ClusterSummary.resource_calculator), as one heartbeat
        if node is not None:
            _apply_calculator(node, batch.cluster)
    return batch


_NO_IDS: frozenset[str] = frozenset()
# ResourceAsk fields a batch reads from the message itself, not from the decoded (cached) Ask: num_containers (9),
# queue_path (40), user_headroom (41), partition (42), locality_names (43). The plugin sends a new count (and often a
# new headroom) with nearly every batch; keyed without them, an ask keeps its decoded Ask, and so its node views,
# across batches.
_PER_BATCH_ASK_FIELDS = frozenset({9, 40, 41, 42, 43})


def stable_ask_key(raw: bytes) -> bytes:
    """An ask's cache key: its serialized bytes less the fields read per batch (_PER_BATCH_ASK_FIELDS); the bytes
    as they are when the walk meets anything unexpected (then the ask is only cached while it does not change)."""
    cut: list[tuple[int, int]] = []
    pos, end = 0, len(raw)
    try:
        while pos < end:
            start = pos
            tag = raw[pos]
            pos += 1
            if tag & 0x80:
                b = raw[pos]
                pos += 1
                if b & 0x80:
                    return raw
                tag = (tag & 0x7F) | (b << 7)
            wire = tag & 7
            if wire == 0:
                while raw[pos] & 0x80:
                    pos += 1
                pos += 1
            elif wire == 2:
                size = shift = 0
                while True:
                    b = raw[pos]
                    pos += 1
                    size |= (b & 0x7F) << shift
                    if not b & 0x80:
                        break
                    shift += 7
                    if shift > 28:
                        return raw
                pos += size
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            else:
                return raw
            if tag >> 3 in _PER_BATCH_ASK_FIELDS:
                cut.append((start, pos))
    except IndexError:
        return raw
    if pos != end or not cut:
        return raw
    parts, last = [], 0
    for a, b in cut:
        parts.append(raw[last:a])
        last = b
    parts.append(raw[last:])
    return b"".join(parts)


def split_batch_asks(data: bytes) -> list[bytes] | None:
    """The serialized asks (field 3) of a serialized ScheduleBatchRequest, cut from its bytes; None when the
    message has anything this walk does not expect (the caller then serializes each ask again)."""
    fields = length_delimited_fields(data)
    return None if fields is None else [data[pos:nxt] for field, pos, nxt in fields if field == 3]


def parse_batch_request(data: bytes) -> pb.ScheduleBatchRequest:
    try:
        return pb.ScheduleBatchRequest.FromString(data)
    except DecodeError as e:
        raise BatchRefused(f"not a yarnrl.v1.ScheduleBatchRequest ({e})") from None


# ---------------------------------------------------------------- deciding


class BatchScheduler:
    """Decides ScheduleBatch requests on an Engine (policy_engine.engine), one node at a time through
    Engine.schedule_logged, with the batch's asks booked between nodes.

    Node views (an ask as one heartbeat of a node would carry it) are cached across batches by what they hold
    (the decoded ask's identity, the "*" count left, the node's host and rack entries), so an ask that did not
    change is not rebuilt for every node of every batch."""

    def __init__(self, engine, max_views: int = 50_000, fast: bool = True):
        self.engine = engine
        self.fast = fast
        self.asks = AskCache()
        self.views: dict[tuple, tuple[Ask, Ask]] = {}
        self.cells: dict[int, tuple[Ask, list[int]]] = {}  # decoded ask's id -> (it, its live count)
        self.rack_views: dict[tuple[str, str], tuple[np.ndarray, list[Ask], list[Ask]]] = {}
        self.max_views = max_views
        self._lr: dict[tuple[str, int, bool], LocalityRequest] = {}
        self._last_order: tuple | None = None  # (signature, _asks_order's result) of the last batch's asks

    def decode(self, req: pb.ScheduleBatchRequest, data: bytes | None = None) -> ScheduleBatch:
        """`data`: the request's bytes, when at hand (the server): the asks' cache keys are cut from them."""
        raw = split_batch_asks(data) if data is not None else None
        if raw is not None and len(raw) != len(req.asks):
            raw = None
        return decode_batch(req, self.asks, raw, fast=self.fast)

    def decide(self, batch: ScheduleBatch) -> BatchDecision:
        """In-process: the whole batch at once."""
        gen = self.steps(batch)
        while True:
            try:
                next(gen)
            except StopIteration as stop:
                return stop.value

    def _entry(self, name: str, count: int, relax: bool) -> LocalityRequest:
        key = (name, count, relax)
        lr = self._lr.get(key)
        if lr is None:
            if len(self._lr) >= self.max_views:
                self._lr.clear()
            lr = self._lr[key] = LocalityRequest(name, count, relax)
        return lr

    def _view(self, b: BatchAsk, host: str | None, host_count: int, rack: str, rack_state: int) -> Ask:
        """The ask as one heartbeat of the node would carry it (Snapshots.Builder): its host entry (count > 0),
        its rack entry (rack_state = count * 2 + relax, or < 0 when the heartbeat would not carry it), the "*"
        count left, the whole ask's name count. Cached by content (and the decoded ask's identity); a LiveAsk,
        whose "*" count is read from the batch, when `b.cell` is set."""
        a = b.ask
        live = b.cell is not None
        key = (id(a), -1 if live else b.any, b.any_relax, b.names, host, host_count,
               rack if rack_state >= 0 else None, rack_state)
        hit = self.views.get(key)
        if hit is not None and hit[0] is a:
            return hit[1]
        kept: tuple[LocalityRequest, ...] = (self._entry(host, host_count, True),) if host_count > 0 else ()
        if rack_state >= 0:
            kept += (self._entry(rack, rack_state >> 1, bool(rack_state & 1)),)
        cls = LiveAsk if live else Ask
        v = cls(a.ask_id, a.application_id, a.attempt_id, a.queue, a.user, a.priority, a.allocation_request_id,
                a.resource, b.any, kept, a.submit_time_ms, a.job, b.any_relax, locality_names=b.names)
        if live:
            v._cell = b.cell
        self.views[key] = (a, v)
        return v

    def _cell(self, a: Ask) -> list[int]:
        hit = self.cells.get(id(a))
        if hit is None or hit[0] is not a:
            if len(self.cells) >= self.max_views:
                # views hold their ask's cell: with the cells go the views (else a view would read a stale cell)
                self.cells.clear()
                self.views.clear()
                self.rack_views.clear()
            hit = self.cells[id(a)] = (a, [0])
        return hit[1]

    def _asks_order(self, asks: list[BatchAsk]) -> tuple:
        """(order, rank, part_index, col_pos, any_blocks) of a batch's asks: their columns in FIFO order, each
        column's FIFO rank, each partition's columns in FIFO order, each column's position in its partition's list
        (-1: another partition), whether any ask has input blocks. All depend only on the decoded asks and their
        partitions, which consecutive batches mostly share (an ask keeps its decoded form while only its count
        changes): kept for the last batch's asks and reused when they come again in the same columns."""
        signature = [(b.ask, b.partition) for b in asks]  # (holds the asks: their ids stay theirs meanwhile)
        last = self._last_order
        if last is not None and len(last[0]) == len(signature) and all(
                x[0] is y[0] and x[1] == y[1] for x, y in zip(last[0], signature)):
            return last[1]
        n = len(asks)
        order = [b.index for b in sorted(asks, key=lambda b: _FIFO_KEY(b.ask))]
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n, dtype=np.int64)
        part_index = {p: np.fromiter((i for i in order if asks[i].partition == p), dtype=np.int64)
                      for p in {b.partition for b in asks}}
        col_pos: dict[str, list[int]] = {}
        for p, pidx in part_index.items():
            cp = [-1] * n
            for j, c in enumerate(pidx.tolist()):
                cp[c] = j
            col_pos[p] = cp
        any_blocks = any(b.ask.job is not None and b.ask.job.input_blocks for b in asks)
        static = (order, rank, part_index, col_pos, any_blocks)
        self._last_order = (signature, static)
        return static

    def _rack_changes(self, batch: ScheduleBatch, state: BatchState, part_index: dict[str, np.ndarray],
                      no_rack: np.ndarray) -> dict[tuple[str, str], tuple[np.ndarray, list[int] | None]]:
        """For every (rack, partition) of the batch's nodes: its asks' state as the rack's first node will see it
        if no booking comes first (the per-node `cur`), and the positions where it differs from the rack's cached
        list (None: no usable cached list), all racks in a few numpy calls instead of ~5 per node."""
        pos = batch.table.pos
        keys: dict[str, dict[tuple[str, str], int]] = {}
        for node, partition in zip(batch.nodes, batch.node_partitions):
            if node is None:
                continue
            idx = part_index.get(partition)
            if idx is None or not idx.size:
                continue
            rack = node.rack
            rk = pos.get(rack) if rack != node.host else None
            keys.setdefault(partition, {}).setdefault((rack, partition), -1 if rk is None else rk)
        out: dict[tuple[str, str], tuple[np.ndarray, list[int] | None]] = {}
        rack_views = self.rack_views
        for partition, racks in keys.items():
            idx = part_index[partition]
            n = idx.size
            rows = np.fromiter(racks.values(), dtype=np.int64, count=len(racks))
            cur = np.empty((rows.size, 4, n), dtype=np.int64)
            cur[:] = state.ask_state[:, idx]
            cur[:, 2, :] = no_rack[:n]
            valid = rows >= 0
            if valid.any():
                cur[valid, 2, :] = state.rack_state[rows[valid]][:, idx]
            cached_at, olds = [], []
            for r, rkey in enumerate(racks):
                cached = rack_views.get(rkey)
                if cached is not None and cached[0].shape == (4, n):
                    cached_at.append(r)
                    olds.append(cached[0])
                out[rkey] = (cur[r], None)
            if olds:
                changed: list[list[int]] = [[] for _ in cached_at]
                rr, jj = np.nonzero((np.stack(olds) != cur[cached_at]).any(axis=1))
                for r, j in zip(rr.tolist(), jj.tolist()):
                    changed[r].append(j)
                keys_list = list(racks)
                for r, js in zip(cached_at, changed):
                    out[keys_list[r]] = (cur[r], js)
        return out

    def steps(self, batch: ScheduleBatch, yield_every_s: float = YIELD_EVERY_S) -> Iterator[None]:
        """A generator that decides the batch, yielding after every `yield_every_s` of work (so an asyncio caller
        can let other calls run), and returns the BatchDecision."""
        engine = self.engine
        policy = engine.policy
        idle_ok = getattr(policy, "idle_without_room", False)
        asks = batch.asks
        table = batch.table
        n_asks = len(asks)
        # Views are shared between nodes and batches unless something may keep or edit an observation after its
        # decision (a decision log writes it later; annotators edit asks): then every node gets fresh ones.
        # DeepRM's view (engine.state.deeprm) keeps asks in its job slots across heartbeats and copies them
        # (dataclasses.replace), so it gets fresh plain views too.
        shared = engine.decision_log is None and not engine.annotators and engine.state.deeprm is None
        if shared:
            for b in asks:  # live "*" counts: a booking changes the cell, not every view of the ask
                b.cell = self._cell(b.ask)
                b.cell[0] = b.any
        state = BatchState(asks, table, live_counts=shared)
        by_id = {b.ask.ask_id: b for b in asks}
        # asks by partition in FIFO order (a node sees only its partition's asks), sorted once per batch: each
        # node's list is then already in the order FIFO, Delay, ACL and CLQLMRS visit asks (FifoOrdered)
        fast = self.fast
        static = self._asks_order(asks) if fast else None
        if static is not None:
            order, rank, part_index, col_pos, any_blocks = static
        else:
            order = [b.index for b in sorted(asks, key=lambda b: _FIFO_KEY(b.ask))]
            rank = None
            part_index = {p: np.fromiter((i for i in order if asks[i].partition == p), dtype=np.int64)
                          for p in {b.partition for b in asks}}
        # Delay, ACL, CLQLMRS: the batch's missed-opportunity counts as one array (needs the live views)
        opp = BatchOpportunities(engine.state.opportunities, asks, rank) if shared else None
        if opp is not None and not opp.active:
            opp = None
        views = self.views
        if len(views) >= self.max_views or not shared:
            views.clear()
        rack_views = self.rack_views
        if len(rack_views) >= self.max_views // 10:
            rack_views.clear()
        view = self._view
        pos = table.pos
        count = table.count
        request_ids = batch.request_ids
        results: list[NodeResult] = []
        idle = 0
        no_rack = np.full(n_asks, -2, dtype=np.int64)
        if fast:
            # The asks each host row names with containers at the start of the batch, found by one numpy call
            # (bookings only lower counts, so the live count of these is read per node and nothing else can be
            # named); each ask's position in its partition's FIFO list; the input-block count of every node's list
            # (0 when no ask of the batch has blocks, else counted by the engine per node).
            host_rows = sorted({r for n in batch.nodes if n is not None
                                for r in (pos.get(n.host), pos.get(n.node_id)) if r is not None})
            named_cols: dict[int, list[int]] = {}
            if host_rows and n_asks:
                rows = np.asarray(host_rows, dtype=np.int64)
                nz_r, nz_c = np.nonzero(count[rows] > 0)
                for r, c in zip(rows[nz_r].tolist(), nz_c.tolist()):
                    named_cols.setdefault(r, []).append(c)
            # (annotators may add blocks to a node's asks before the engine counts them: then the engine counts)
            with_blocks = -1 if not shared or any_blocks else 0
            item = count.item
            first_visit = self._rack_changes(batch, state, part_index, no_rack) if shared else {}
            dead_at_start = state.dead
        t_next = time.perf_counter() + yield_every_s
        for k, node in enumerate(batch.nodes):
            rid = request_ids[k] if request_ids else ""
            if node is None:
                results.append(NodeResult(batch.node_ids[k], rid, refusal=batch.node_errors[k]))
                continue
            partition = batch.node_partitions[k]
            idx = part_index.get(partition)
            if idle_ok and (idx is None or state.min_live_memory(partition, idx) > node.unallocated.memory_mb):
                # No live ask fits even by memory: a policy that declares it decides nothing here is not called
                # (its answer would be empty and the opportunity counts unchanged).
                results.append(NodeResult(node.node_id, rid, engine.next_decision_id()))
                idle += 1
                if engine.metrics is not None:  # an answer ("nothing") like any other: counted as a decision
                    engine.metrics.decided("schedule", policy.name)
                continue
            host, node_id, rack = node.host, node.node_id, node.rack
            hk, nk = pos.get(host), pos.get(node_id)
            rk = pos.get(rack) if rack != host else None
            if idx is None or not idx.size:
                node_asks = FifoOrdered()
            else:
                # The node's asks without its host entries: the rack's list, kept across nodes and batches and
                # patched where numpy finds an ask's state (identity, "*" count, this rack's entry) changed.
                rkey = (rack, partition)
                pre = first_visit.pop(rkey, None) if fast else None
                if pre is not None and (rk in state.touched or state.dead != dead_at_start):
                    pre = None  # a booking since the batch started changed what was compared
                if pre is not None:
                    cur = pre[0]
                else:
                    cur = state.ask_state[:, idx]
                    cur[2] = state.rack_state[rk, idx] if rk is not None else no_rack[:idx.size]
                cached = rack_views.get(rkey) if shared else None
                if cached is not None and cached[0].shape == cur.shape:
                    changed = (pre[1] if pre is not None
                               else np.flatnonzero((cached[0] != cur).any(axis=0)).tolist())
                    base = cached[1]
                    if changed:
                        base, owners = list(base), list(cached[2])
                        for j in changed:
                            bj = asks[int(idx[j])]
                            base[j] = view(bj, None, 0, rack, int(cur[2, j])) if bj.any > 0 else None
                            owners[j] = bj.ask
                        rack_views[rkey] = (cur.copy() if pre is not None else cur, base, owners)
                else:
                    rst = cur[2].tolist()
                    base = [view(asks[i], None, 0, rack, rst[j]) if asks[i].any > 0 else None
                            for j, i in enumerate(idx.tolist())]
                    # (the entry also holds the decoded asks, so their ids cannot be reused while it is kept)
                    if shared:
                        rack_views[rkey] = (cur.copy() if pre is not None else cur, base,
                                            [asks[i].ask for i in idx.tolist()])
                if fast and (hk is not None or nk is not None):
                    cols = named_cols.get(hk, []) if hk is not None else []
                    if nk is not None and nk in named_cols:
                        cols = sorted(set(cols) | set(named_cols[nk]))
                    cp = col_pos[partition]
                    named_at = []
                    for c in cols:
                        j = cp[c]
                        if j < 0:
                            continue
                        h = item(hk, c) if hk is not None else item(nk, c)
                        if hk is not None and nk is not None:
                            h = max(h, item(nk, c))
                        if h > 0:
                            named_at.append((j, c, h))
                    if named_at:
                        base = list(base)
                        for j, c, h in named_at:
                            bj = asks[c]
                            if bj.any > 0:
                                base[j] = view(bj, host, h, rack, int(cur[2, j]))
                elif hk is not None or nk is not None:
                    hc = count[hk, idx] if hk is not None else count[nk, idx]
                    if hk is not None and nk is not None:
                        hc = np.maximum(hc, count[nk, idx])
                    named = np.flatnonzero(hc > 0).tolist()
                    if named:
                        base = list(base)
                        for j in named:
                            bj = asks[int(idx[j])]
                            if bj.any > 0:
                                base[j] = view(bj, host, int(hc[j]), rack, int(cur[2, j]))
                floor = state.min_live_memory(partition, idx)
                if fast:
                    node_asks = FifoOrdered((v for v in base if v is not None) if state.dead else base, floor,
                                            with_blocks, True)
                else:
                    node_asks = (FifoOrdered((v for v in base if v is not None), floor) if state.dead
                                 else FifoOrdered(base, floor))
            obs = ScheduleObservation(node, node_asks, batch.cluster, rid)
            if opp is not None and node_asks:
                opp.offer(idx[state.live[idx]] if state.dead else idx, node_asks, node.unallocated)
            try:
                decision, decision_id = engine.schedule_logged(obs, count_opportunities=opp is None)
            except (InvalidRequest, ObservationMismatch) as e:  # this node's request, not the batch, is wrong
                results.append(NodeResult(node_id, rid, refusal=f"nodes[{k}] (node_id {node_id!r}): {e}"))
                batch.node_errors[k] = results[-1].refusal
                continue
            if opp is not None:
                opp.settle(decision, by_id)
            for a in decision.assignments:
                state.book(by_id[a.ask_id], hk, nk, rk, a.locality, a.count)
            if not shared:
                views.clear()
            results.append(NodeResult(node_id, rid, decision_id, decision.assignments))
            if time.perf_counter() >= t_next:
                if opp is not None:
                    opp.flush()  # other calls may count (or forget) opportunities while the loop is handed back
                yield
                if opp is not None:
                    opp.load()
                    if not opp.active:
                        opp = None
                t_next = time.perf_counter() + yield_every_s
        if opp is not None:
            opp.flush()
        return BatchDecision(batch.batch_id, results, batch.ask_errors, idle)


class BatchOpportunities:
    """The engine's missed-opportunity counts (OpportunityTracker) of a batch's asks as one numpy array while the
    batch is decided, instead of a Python loop over every ask of every node: per node, the live asks of its list
    that fit it get +1 in one numpy step (ResourceCalculator rules of Resource.max_copies_in: memory, and vcores
    unless it compares memory only) and the counts are written into the node's views; an ask given a node- or
    rack-local container is reset to 0 after the node's decision. The counts are written back to the tracker, in
    the LRU order the per-node path leaves them (by last touch), before the batch hands the event loop back and at
    its end, and read again after. Exactly OpportunityTracker.offer / settle per node (tests/test_batch.py).

    Not used (`active` False; the per-node path counts) when an ask has extra resource types, two asks share a
    key, or the batch's asks could push the tracker past its bound (its LRU eviction would then differ)."""

    def __init__(self, tracker: OpportunityTracker | None, asks: list[BatchAsk], rank: np.ndarray | None = None):
        """`rank`: each ask's position in FIFO order (every node's list is in that order), given in fast mode: a
        node's offer then stamps its asks with the node's number, and flush orders touches by (node, rank), as the
        per-ask sequence numbers did; a node's columns' sizes are sliced once per list, not per node."""
        self.tracker = tracker
        self.rank = rank
        self._cols = None
        self.keys = [b.ask.key for b in asks]
        n = len(asks)
        self.active = (tracker is not None and n > 0 and not any(b.ask.resource.extra for b in asks)
                       and len(set(self.keys)) == n)
        if not self.active:
            return
        self.memory = np.fromiter((b.ask.resource.memory_mb for b in asks), dtype=np.int64, count=n)
        self.vcores = np.fromiter((b.ask.resource.vcores for b in asks), dtype=np.int64, count=n)
        self.no_memory = self.memory <= 0
        self.no_vcores = self.vcores <= 0
        self.counts = np.zeros(n, dtype=np.int64)
        self.touch = np.full(n, -1, dtype=np.int64)
        self.seq = 0
        self.load()

    def load(self) -> None:
        tracker = self.tracker
        if len(tracker) + len(self.keys) > tracker.max_keys:
            self.active = False
            return
        get = tracker._counts.get
        self.counts[:] = [get(k, 0) for k in self.keys]

    def offer(self, cols: np.ndarray, views: list[Ask], free: Resource) -> None:
        """OpportunityTracker.offer for a node whose list holds the asks of columns `cols`, in order (`views`)."""
        if self.rank is not None:
            if cols is not self._cols:  # the partition's list (the same array while no ask of it ran out)
                self._cols = cols
                self._slices = (self.no_memory[cols], self.memory[cols], self.no_vcores[cols], self.vcores[cols])
            no_memory, memory, no_vcores, vcores = self._slices
            fits = no_memory | (memory <= free.memory_mb)
            if free.compared != _MEMORY_ONLY:
                fits &= no_vcores | (vcores <= free.vcores)
            counts = self.counts
            counts[cols] += fits  # (a list holds each ask once)
            self.touch[cols] = self.seq
            self.seq += 1
            assert len(views) == cols.size, "a node's list and its columns differ"
            for view, c in zip(views, counts[cols].tolist()):
                view.scheduling_opportunities = c
            return
        fits = self.no_memory[cols] | (self.memory[cols] <= free.memory_mb)
        if free.compared != _MEMORY_ONLY:
            fits &= self.no_vcores[cols] | (self.vcores[cols] <= free.vcores)
        counts = self.counts
        counts[cols[fits]] += 1
        seq = self.seq
        self.touch[cols] = np.arange(seq, seq + cols.size)
        self.seq = seq + cols.size
        assert len(views) == cols.size, "a node's list and its columns differ"
        for view, c in zip(views, counts[cols].tolist()):
            view.scheduling_opportunities = c

    def settle(self, decision, by_id: dict[str, BatchAsk]) -> None:
        """OpportunityTracker.settle: an ask given a node- or rack-local container starts counting again."""
        for a in decision.assignments:
            if a.locality != Locality.OFF_SWITCH:
                self.counts[by_id[a.ask_id].index] = 0

    def flush(self) -> None:
        """Write the counts of the asks touched since the last load back, most recently touched last."""
        touch = self.touch
        touched = np.flatnonzero(touch >= 0)
        if not touched.size:
            return
        tracked = self.tracker._counts
        keys, counts = self.keys, self.counts
        if self.rank is not None:
            touched = touched[np.lexsort((self.rank[touched], touch[touched]))]
        else:
            touched = touched[np.argsort(touch[touched], kind="stable")]
        for c in touched.tolist():
            key = keys[c]
            tracked.pop(key, None)
            tracked[key] = int(counts[c])
        touch[:] = -1


class BatchState:
    """What changes while a batch is decided, as numpy arrays: per ask its identity, "*" count left and what else a
    node view carries; per (name, ask) the rack entry as a single heartbeat would carry it (count * 2 + relax, or -1
    when it would leave it out: count 0 and relaxing); the smallest live ask per partition."""

    def __init__(self, asks: list[BatchAsk], table: LocalityTable, live_counts: bool = False):
        self.asks, self.table = asks, table
        self.live_counts = live_counts
        n = len(asks)
        # identity, "*" left (with live counts: only whether any is left), (rack entry, per node), meta
        self.ask_state = np.zeros((4, n), dtype=np.int64)
        if n:  # one pass over the asks, one conversion (four generator passes cost more than the rest of this)
            columns = np.array([(id(b.ask), min(b.any, 1) if live_counts else b.any, 0,
                                 b.names * 2 + b.any_relax, b.ask.resource.memory_mb) for b in asks],
                               dtype=np.int64).T
            self.ask_state[:] = columns[:4]
            self.memory = columns[4].copy()
        else:
            self.memory = np.zeros(0, dtype=np.int64)
        self.live = self.ask_state[1] > 0
        self.dead = int(n - self.live.sum())
        c, r = table.count, table.relax
        self.rack_state = np.where(table.has & ((c > 0) | ~r), c * 2 + r, -1)
        self._min_memory: dict[str, int] = {}
        self.touched: set[int] = set()  # rack rows whose entries a booking changed during the batch

    def min_live_memory(self, partition: str, idx: np.ndarray) -> int:
        m = self._min_memory.get(partition)
        if m is None:
            live = idx[self.live[idx]]
            m = self._min_memory[partition] = int(self.memory[live].min()) if live.size else 1 << 62
        return m

    def book(self, b: BatchAsk, hk: int | None, nk: int | None, rk: int | None, level: Locality, n: int) -> None:
        """YARN's bookkeeping of n containers of one ask on this node (AppSchedulingInfo.allocate), as
        AskOnNode.take books it within one heartbeat: node-local uses the host, the rack and "*"; rack-local the
        rack and "*"."""
        t, c = self.table, b.index
        count = t.count
        if level in _NODE_LOCAL:
            for row in (hk, nk):
                if row is not None:
                    count[row, c] = max(int(count[row, c]) - n, 0)
        if rk is not None and (level in _NODE_LOCAL or level == Locality.RACK_LOCAL):
            left = max(int(count[rk, c]) - n, 0)
            count[rk, c] = left
            relax = bool(t.relax[rk, c])
            self.rack_state[rk, c] = left * 2 + relax if t.has[rk, c] and (left > 0 or not relax) else -1
            self.touched.add(rk)
        b.any = max(b.any - n, 0)
        if b.cell is not None:
            b.cell[0] = b.any
        self.ask_state[1, c] = min(b.any, 1) if self.live_counts else b.any
        b.version += 1
        if b.any == 0 and self.live[c]:
            self.live[c] = False
            self.dead += 1
            self._min_memory.clear()


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
                 ask_partitions: list[str] | None = None, columnar: bool = True) -> pb.ScheduleBatchRequest:
    """A ScheduleBatchRequest from observation objects (the emulator, tests, benchmarks): the nodes, then the asks
    once, their entries in the locality table (`columnar`) or inside each ask."""
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
    if columnar:
        col = req.locality
        pos: dict[str, int] = {}
        for i, m in enumerate(req.asks):
            for lr in m.locality:
                k = pos.get(lr.resource_name)
                if k is None:
                    k = pos[lr.resource_name] = len(pos)
                    col.names.append(lr.resource_name)
                col.ask_index.append(i)
                col.name_index.append(k)
                col.num_containers.append(lr.num_containers)
                col.relax_locality.append(lr.relax_locality)
            del m.locality[:]
    req.cluster.CopyFrom(full.cluster)
    return req
