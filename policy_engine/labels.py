"""Honest locality labels for containers on a real cluster: which input block a container reads, and from where.

Where the truth is computed, and why here
-----------------------------------------
The ResourceManager knows the node and the ask a container was allocated for, but not the job's blocks; the engine
knows the blocks (WebHDFS, `policy_engine.hdfs`), but not which map task the ApplicationMaster runs in a container.
Neither alone knows the read level. The MapReduce ApplicationMaster decides it, by a fixed rule
(RMContainerAllocator.assignMapsWithLocality): a container on host H runs the first pending map, in task order,
whose split has a replica on H; failing that the first whose split has a replica in H's rack; failing that the
first pending map. Task order is the job's splits sorted by length, longest first, ties in input order
(JobSubmitter's SplitComparator, a stable sort). So the engine, which has the blocks, replays that rule on a
per-application ledger of pending map inputs, and labels each ContainerStarted / ContainerFinished of a map ask
before any learner sees it:

  CACHE_LOCAL   the block has a cached replica on the node                 (CLQLMRS's CL)
  NODE_LOCAL    a disk replica on the node                                 (DL)
  RACK_LOCAL    a replica in the node's rack; rack_cached tells CRL / DRL  (CRL when a cached replica is in the rack)
  OFF_SWITCH    none in the rack                                           (NO)

with `input_block_id` naming the block. Containers of asks without input blocks (ApplicationMasters, reduces)
keep the level the plugin sent (YARN's). The ledger is also an observation annotator: it narrows each map ask's
`input_blocks` to the blocks still pending, so policies see what is left to read, not the whole input.

This is exact for MapReduce with one input block per split (the default: split size = block size) and as long as
no map attempt fails; the benchmark (benchmarks/real_locality.py) checks it against a ground-truth counter each map
task computes from its own split and host. Other frameworks' ApplicationMasters choose differently; for them the
labels are the same rule's best guess.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field

from policy_engine.types import (
    BlockInfo,
    ContainerFinished,
    ContainerStarted,
    Event,
    JobFinished,
    Locality,
    NodeAdded,
    ScheduleObservation,
)

log = logging.getLogger(__name__)

# labels of ContainerStarted for the read states, and the Prometheus label of each
STATE_NAMES = ("cl", "dl", "crl", "drl", "no")


@dataclass(slots=True)
class _Ledger:
    order: tuple[BlockInfo, ...]                       # the job's map inputs in task order
    pending: list[bool]                                # per entry of `order`
    map_asks: set[str] = field(default_factory=set)    # ask ids of the job's map asks
    consumed: list[int] = field(default_factory=list)  # indexes in consumption order


def task_order(blocks: tuple[BlockInfo, ...]) -> tuple[BlockInfo, ...]:
    """MapReduce's task order of splits (one per block): longest first, ties in input order (stable sort)."""
    return tuple(sorted(blocks, key=lambda b: -b.length))


class LocalityLabeler:
    """Per-application ledger of pending map inputs; labels Report events and narrows asks' input blocks.

    Attach with `engine.annotators.append(labeler.annotate)` (after the block locator), and
    `engine.event_annotators.append(labeler.label)`.
    """

    def __init__(self, max_apps: int = 10_000, registry=None):
        self.max_apps = max_apps
        self._apps: OrderedDict[str, _Ledger] = OrderedDict()
        self._nodes: dict[str, tuple[str, str]] = {}          # node id -> (host, rack)
        self._rack_of_host: dict[str, str] = {}
        self._labels: OrderedDict[str, tuple[int, bool | None, str]] = OrderedDict()  # container id -> label
        self.labelled = {name: 0 for name in STATE_NAMES}
        self._counter = None
        if registry is not None:
            from prometheus_client import Counter

            self._counter = Counter("yarnrl_map_containers_read", "Map containers by the read level the engine "
                                    "labelled (cl, dl, crl, drl, no)", ["state"], registry=registry)

    # ------------------------------------------------------------ observations

    def annotate(self, obs: ScheduleObservation) -> None:
        node = obs.node
        if node.node_id:
            self._nodes[node.node_id] = (node.host, node.rack)
            if node.host and node.rack:
                self._rack_of_host[node.host] = node.rack
        for ask in obs.asks:
            job = ask.job
            if job is None or not job.input_blocks or not any(lr.resource_name != "*" for lr in ask.locality):
                continue  # not a map ask: nothing to narrow
            ledger = self._apps.get(ask.application_id)
            if ledger is None:
                order = task_order(job.input_blocks)
                ledger = self._apps[ask.application_id] = _Ledger(order, [True] * len(order))
                while len(self._apps) > self.max_apps:
                    self._apps.popitem(last=False)
            ledger.map_asks.add(ask.ask_id)
            # The ledger cannot know about map attempts that failed and were asked for again: never show fewer
            # pending blocks than the ask has pending containers.
            while sum(ledger.pending) < ask.num_containers and ledger.consumed:
                ledger.pending[ledger.consumed.pop()] = True
            job.input_blocks = tuple(b for b, p in zip(ledger.order, ledger.pending) if p)

    def observe_node(self, node_id: str, host: str, rack: str) -> None:
        self._nodes[node_id] = (host, rack)
        if host and rack:
            self._rack_of_host[host] = rack

    # ------------------------------------------------------------ events

    def _where(self, node_id: str) -> tuple[str, str]:
        known = self._nodes.get(node_id)
        if known is not None:
            return known
        host = node_id.split(":", 1)[0]
        return host, self._rack_of_host.get(host, "")

    def _rack_cached(self, block: BlockInfo, rack: str) -> bool:
        for h in block.cached_hosts:
            try:
                r = block.racks[block.hosts.index(h)]
            except (ValueError, IndexError):
                r = self._rack_of_host.get(h, "")
            if r == rack:
                return True
        return False

    def _take(self, ledger: _Ledger, host: str, rack: str) -> tuple[int, bool | None, str]:
        """Replay the ApplicationMaster's choice for a container on (host, rack); consume that block."""
        order, pending = ledger.order, ledger.pending
        pick, level = -1, Locality.OFF_SWITCH
        for i, b in enumerate(order):
            if pending[i] and (host in b.hosts or host in b.cached_hosts):
                pick, level = i, (Locality.CACHE_LOCAL if host in b.cached_hosts else Locality.NODE_LOCAL)
                break
        if pick < 0 and rack:
            for i, b in enumerate(order):
                if pending[i] and (rack in b.racks or any(self._rack_of_host.get(h) == rack for h in b.hosts)):
                    pick, level = i, Locality.RACK_LOCAL
                    break
        if pick < 0:
            pick = next((i for i, p in enumerate(pending) if p), -1)
            if pick < 0:
                return Locality.UNSPECIFIED, None, ""  # more map containers than inputs: the ledger drifted
        pending[pick] = False
        ledger.consumed.append(pick)
        block = order[pick]
        rack_cached = self._rack_cached(block, rack) if level == Locality.RACK_LOCAL else None
        return int(level), rack_cached, block.block_id

    def label(self, ev: Event) -> None:
        if isinstance(ev, NodeAdded):
            self.observe_node(ev.node_id, ev.host, ev.rack)
        elif isinstance(ev, ContainerStarted):
            e = ev
            if e.container_id in self._labels:
                got = self._labels[e.container_id]
            else:
                ledger = self._apps.get(e.application_id)
                if ledger is None or e.ask_id not in ledger.map_asks:
                    return
                host, rack = self._where(e.node_id)
                got = self._take(ledger, host, rack)
                if got[0] == Locality.UNSPECIFIED:
                    return
                self._labels[e.container_id] = got
                while len(self._labels) > 200_000:
                    self._labels.popitem(last=False)
                self._count(got)
            self._apply(e, got)
        elif isinstance(ev, ContainerFinished):
            got = self._labels.pop(ev.container_id, None)
            if got is not None:
                self._apply(ev, got)
        elif isinstance(ev, JobFinished):
            self._apps.pop(ev.job_id, None)

    def _count(self, got: tuple[int, bool | None, str]) -> None:
        level, rack_cached, _ = got
        state = {Locality.CACHE_LOCAL: "cl", Locality.NODE_LOCAL: "dl", Locality.OFF_SWITCH: "no"}.get(
            level, "crl" if rack_cached else "drl")
        self.labelled[state] += 1
        if self._counter is not None:
            self._counter.labels(state).inc()

    @staticmethod
    def _apply(e, got: tuple[int, bool | None, str]) -> None:
        level, rack_cached, block_id = got
        e.locality = Locality(level)
        e.rack_cached = rack_cached
        e.input_block_id = block_id
