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

Containers the ApplicationMaster receives together
--------------------------------------------------
The AM assigns the containers of one allocate response together, in three passes
(RMContainerAllocator.assignMapsWithLocality): first every container that has a host-local pending map gets one,
then every remaining container with a rack-local map, then the rest, in task order. One at a time, a container on a
node with nothing local left would take (rack-local) a map that a later container of the same response gets
host-local from the AM: labels then went wrong exactly for the policies that place off the data (FIFO 6 engine
cache-local labels against 10 cache-local reads; CLQLMRS 14 against 12; Delay, placing node-locally only, 12 of 12).
The engine does not see the AM's allocate calls, so containers of one application allocated within `batch_ms`
(the AM's heartbeat, `yarn.app.mapreduce.am.scheduler.heartbeat.interval-ms`, 1000 ms by default) of the first one
of a window are taken as one response: each new container of the window replays the window from the ledger's state
at its start with the three passes, and earlier containers' labels (what ContainerFinished carries and the counts)
are corrected. A learner has seen the earlier labels already; it gets the corrected ones on ContainerFinished.

Containers released unused
--------------------------
The RM allocates a few more containers than a MapReduce AM needs while the AM's asks catch up with what it got;
the AM releases those unused (ContainerFinished with exit status ABORTED, -100). They were counted as map
containers (in a loaded benchmark run, CLQLMRS's labels counted 57 maps for 48 that ran); now such a container's
block goes back to the ledger and its label is uncounted.

Containers the plugin placed natively
-------------------------------------
A ledger needs the job's blocks, and the engine may not have them when the job's map asks go by: WebHDFS answers
in the background (a path seen for the first time has no blocks on that heartbeat), and on a deadline miss, an
unavailable engine or an open breaker the plugin places the heartbeat natively (FIFO places a whole job's maps in
one or two heartbeats). Labels then went missing for whole jobs (in a loaded benchmark run, FIFO's engine labels
counted 1 cache-local map where the maps themselves counted 4). So the ledger does not depend on having seen a
map ask *with* blocks: the labeler remembers each application's input paths and map asks from every observation
(the ApplicationMaster's own ask names the paths too), and when a map container starts for an application without
a ledger it builds the ledger then, from `blocks_of(paths)` (the block locator's cache: non-blocking). A map ask
it never saw at all is recognised by its priority (the ask id is `attempt/priority/allocation id`): that of the
application's map asks seen so far, else MapReduce's map priority (20).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

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
# ContainerExitStatus.ABORTED: a container released by its application (or aborted) before it ran a task
ABORTED = -100
# MapReduce's map ask priority (RMContainerAllocator.PRIORITY_MAP); fast-fail maps (5), reduces (10) and the
# ApplicationMaster (0) differ
MAPREDUCE_MAP_PRIORITY = 20


def ask_priority(ask_id: str) -> int | None:
    """The priority in the plugin's ask id (`attempt/priority/allocation id`), None for another form."""
    parts = ask_id.split("/")
    if len(parts) != 3:
        return None
    try:
        return int(parts[1])
    except ValueError:
        return None


@dataclass(slots=True)
class _App:
    """What the observations told about an application before (or without) its blocks."""
    paths: tuple[str, ...] = ()
    map_asks: set[str] = field(default_factory=set)
    other_asks: set[str] = field(default_factory=set)   # asks without host/rack entries (AM, reduces)


@dataclass(slots=True)
class _Ledger:
    order: tuple[BlockInfo, ...]                       # the job's map inputs in task order
    pending: list[bool]                                # per entry of `order`
    map_asks: set[str] = field(default_factory=set)    # ask ids of the job's map asks
    consumed: list[int] = field(default_factory=list)  # indexes in consumption order
    # the current allocate window: its first allocation time, its containers (id, host, rack) and the ledger's
    # (pending, consumed) before it
    window_ms: int = -1
    window: list[tuple[str, str, str]] = field(default_factory=list)
    before: tuple[list[bool], list[int]] | None = None


def task_order(blocks: tuple[BlockInfo, ...]) -> tuple[BlockInfo, ...]:
    """MapReduce's task order of splits (one per block): longest first, ties in input order (stable sort)."""
    return tuple(sorted(blocks, key=lambda b: -b.length))


class LocalityLabeler:
    """Per-application ledger of pending map inputs; labels Report events and narrows asks' input blocks.

    Attach with `engine.annotators.append(labeler.annotate)` (after the block locator), and
    `engine.event_annotators.append(labeler.label)`.
    """

    def __init__(self, max_apps: int = 10_000, registry=None,
                 blocks_of: Callable[[tuple[str, ...]], tuple[BlockInfo, ...] | None] | None = None,
                 batch_ms: int = 1000):
        """`blocks_of(paths)`: the blocks of input paths when known now, without blocking (None or empty when not:
        policy_engine.hdfs.BlockLocator.blocks_of); it lets a ledger be built when a job's first map container
        starts, for jobs whose map asks went by before their blocks were known."""
        self.max_apps = max_apps
        self.blocks_of = blocks_of
        self.batch_ms = batch_ms
        self._apps: OrderedDict[str, _Ledger] = OrderedDict()
        self._seen: OrderedDict[str, _App] = OrderedDict()     # every application observed, blocks or not
        self._nodes: dict[str, tuple[str, str]] = {}          # node id -> (host, rack)
        self._rack_of_host: dict[str, str] = {}
        self._labels: OrderedDict[str, tuple[int, bool | None, str]] = OrderedDict()  # container id -> label
        self.labelled = {name: 0 for name in STATE_NAMES}
        self._counter = None
        if registry is not None:
            from prometheus_client import Gauge

            # a gauge, not a counter: a label is corrected when a later container of the same allocate window
            # changes the AM's assignment (module doc); the sample keeps the counter's name
            self._counter = Gauge("yarnrl_map_containers_read_total", "Map containers by the read level the "
                                  "engine labelled (cl, dl, crl, drl, no)", ["state"], registry=registry)

    # ------------------------------------------------------------ observations

    def annotate(self, obs: ScheduleObservation) -> None:
        node = obs.node
        if node.node_id:
            self._nodes[node.node_id] = (node.host, node.rack)
            if node.host and node.rack:
                self._rack_of_host[node.host] = node.rack
        for ask in obs.asks:
            job = ask.job
            if job is None or not (job.input_blocks or job.input_paths):
                continue
            is_map = ask.names_places
            app = self._app(ask.application_id)
            if job.input_paths and not app.paths:
                app.paths = tuple(job.input_paths)
            (app.map_asks if is_map else app.other_asks).add(ask.ask_id)
            if not is_map or not job.input_blocks:
                continue  # not a map ask, or its blocks are not known yet: nothing to narrow
            ledger = self._apps.get(ask.application_id)
            if ledger is None:
                ledger = self._new_ledger(ask.application_id, job.input_blocks)
            ledger.map_asks.add(ask.ask_id)
            # The ledger cannot know about map attempts that failed and were asked for again: never show fewer
            # pending blocks than the ask has pending containers.
            while sum(ledger.pending) < ask.num_containers and ledger.consumed:
                ledger.pending[ledger.consumed.pop()] = True
            job.input_blocks = tuple(b for b, p in zip(ledger.order, ledger.pending) if p)

    def _app(self, app_id: str) -> _App:
        app = self._seen.get(app_id)
        if app is None:
            app = self._seen[app_id] = _App()
            while len(self._seen) > self.max_apps:
                self._seen.popitem(last=False)
        return app

    def _new_ledger(self, app_id: str, blocks: tuple[BlockInfo, ...]) -> _Ledger:
        order = task_order(blocks)
        ledger = self._apps[app_id] = _Ledger(order, [True] * len(order))
        seen = self._seen.get(app_id)
        if seen is not None:
            ledger.map_asks |= seen.map_asks
        while len(self._apps) > self.max_apps:
            self._apps.popitem(last=False)
        return ledger

    def _ledger_for(self, app_id: str, ask_id: str) -> _Ledger | None:
        """The ledger a container of this ask consumes from, None when the ask is not a map ask of a job with
        known blocks. Builds the ledger from `blocks_of` when the job's blocks were not known while its asks
        were observed, and takes an ask never observed for a map ask by its priority (module doc)."""
        ledger = self._apps.get(app_id)
        app = self._seen.get(app_id)
        if ledger is None:
            if app is None or not app.paths or self.blocks_of is None:
                return None
            blocks = self.blocks_of(app.paths)
            if not blocks:
                return None
            ledger = self._new_ledger(app_id, tuple(blocks))
        if ask_id in ledger.map_asks:
            return ledger
        if app is not None and ask_id in app.other_asks:
            return None
        prio = ask_priority(ask_id)
        known = {ask_priority(a) for a in ledger.map_asks} - {None}
        if prio is not None and prio in (known or {MAPREDUCE_MAP_PRIORITY}):
            ledger.map_asks.add(ask_id)
            return ledger
        return None

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

    def _in_rack(self, block: BlockInfo, rack: str) -> bool:
        return rack in block.racks or any(self._rack_of_host.get(h) == rack for h in block.hosts)

    def _take_window(self, ledger: _Ledger) -> dict[str, tuple[int, bool | None, str]]:
        """The AM's three passes over the window's containers (module doc), consuming blocks from the ledger."""
        order, pending = ledger.order, ledger.pending
        got: dict[str, tuple[int, bool | None, str]] = {}

        def take(cid: str, i: int, level: int, rack: str) -> None:
            pending[i] = False
            ledger.consumed.append(i)
            block = order[i]
            rack_cached = self._rack_cached(block, rack) if level == Locality.RACK_LOCAL else None
            got[cid] = (int(level), rack_cached, block.block_id)

        for cid, host, rack in ledger.window:
            for i, b in enumerate(order):
                if pending[i] and (host in b.hosts or host in b.cached_hosts):
                    take(cid, i, Locality.CACHE_LOCAL if host in b.cached_hosts else Locality.NODE_LOCAL, rack)
                    break
        for cid, host, rack in ledger.window:
            if cid in got or not rack:
                continue
            for i, b in enumerate(order):
                if pending[i] and self._in_rack(b, rack):
                    take(cid, i, Locality.RACK_LOCAL, rack)
                    break
        for cid, host, rack in ledger.window:
            if cid not in got:
                i = next((i for i, p in enumerate(pending) if p), -1)
                if i < 0:
                    break  # more map containers than inputs: the ledger drifted; these stay unlabelled
                take(cid, i, Locality.OFF_SWITCH, rack)
        return got

    def _take(self, ledger: _Ledger, container_id: str, host: str, rack: str, at_ms: int):
        """Label a map container allocated at `at_ms` on (host, rack), replaying its allocate window."""
        if ledger.window and at_ms and 0 <= at_ms - ledger.window_ms < self.batch_ms:
            pending, consumed = ledger.before
            ledger.pending[:], ledger.consumed[:] = pending, consumed
        else:
            ledger.window_ms, ledger.window = at_ms, []
            ledger.before = (list(ledger.pending), list(ledger.consumed))
        ledger.window.append((container_id, host, rack))
        got = self._take_window(ledger)
        for cid, _, _ in ledger.window:
            if cid == container_id:
                continue
            old, new = self._labels.get(cid), got.get(cid)
            if old != new:  # an earlier container of the window: corrected
                if old is not None:
                    self._count(old, -1)
                    del self._labels[cid]
                if new is not None:
                    self._count(new, 1)
                    self._labels[cid] = new
        return got.get(container_id)

    def label(self, ev: Event) -> None:
        if isinstance(ev, NodeAdded):
            self.observe_node(ev.node_id, ev.host, ev.rack)
        elif isinstance(ev, ContainerStarted):
            e = ev
            if e.container_id in self._labels:
                got = self._labels[e.container_id]
            else:
                ledger = self._ledger_for(e.application_id, e.ask_id)
                if ledger is None:
                    return
                host, rack = self._where(e.node_id)
                got = self._take(ledger, e.container_id, host, rack, e.timestamp_ms)
                if got is None:
                    return
                self._labels[e.container_id] = got
                while len(self._labels) > 200_000:
                    self._labels.popitem(last=False)
                self._count(got, 1)
            self._apply(e, got)
        elif isinstance(ev, ContainerFinished):
            got = self._labels.pop(ev.container_id, None)
            if got is None:
                return
            if ev.exit_status == ABORTED:
                self._give_back(ev.application_id, ev.container_id, got)
                return  # it read nothing: the plugin's label stays
            self._apply(ev, got)
        elif isinstance(ev, JobFinished):
            self._apps.pop(ev.job_id, None)
            self._seen.pop(ev.job_id, None)

    def _give_back(self, app_id: str, container_id: str, got: tuple[int, bool | None, str]) -> None:
        """A container the AM released unused (YARN allocates a few more than asked while the AM's asks catch up):
        its block is pending again and its label is not counted."""
        self._count(got, -1)
        ledger = self._apps.get(app_id)
        if ledger is None:
            return
        i = next((i for i, b in enumerate(ledger.order) if b.block_id == got[2] and not ledger.pending[i]), -1)
        if i < 0:
            return
        in_window = any(w[0] == container_id for w in ledger.window)
        states = [(ledger.pending, ledger.consumed)]
        if in_window:
            ledger.window = [w for w in ledger.window if w[0] != container_id]
        elif ledger.before is not None:
            states.append(ledger.before)  # a later window replays from a state where the block is free again
        for pending, consumed in states:
            pending[i] = True
            if i in consumed:
                consumed.remove(i)

    def _count(self, got: tuple[int, bool | None, str], n: int) -> None:
        level, rack_cached, _ = got
        state = {Locality.CACHE_LOCAL: "cl", Locality.NODE_LOCAL: "dl", Locality.OFF_SWITCH: "no"}.get(
            level, "crl" if rack_cached else "drl")
        self.labelled[state] += n
        if self._counter is not None:
            self._counter.labels(state).set(self.labelled[state])

    @staticmethod
    def _apply(e, got: tuple[int, bool | None, str]) -> None:
        level, rack_cached, block_id = got
        e.locality = Locality(level)
        e.rack_cached = rack_cached
        e.input_block_id = block_id
