"""The same ordered node heartbeats driven through the per-heartbeat path (one ScheduleRequest each) and the batched
path (ScheduleBatch, the asks once per batch), with the ResourceManager's bookkeeping between answers as YARN does
it. Used by tests/test_batch.py."""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass

from policy_engine.batch import BatchScheduler, encode_batch
from policy_engine.codec import decode_schedule, encode_schedule
from policy_engine.engine import Engine
from policy_engine.types import (
    ANY,
    Ask,
    BlockInfo,
    ClusterSummary,
    JobMetadata,
    Locality,
    LocalityRequest,
    Node,
    Resource,
    ScheduleDecision,
    ScheduleObservation,
)


@dataclass
class Cluster:
    nodes: list[Node]
    partitions: dict[str, str]  # node id -> partition
    summary: ClusterSummary


def make_cluster(racks: int = 4, per_rack: int = 6, partitioned: int = 0, mem_mb: int = 16384,
                 vcores: int = 16) -> Cluster:
    """`partitioned`: this many nodes (the last) are in partition "x", the rest in the default one."""
    nodes = [Node(f"h{i}:8041", f"h{i}", f"/rack{i // per_rack}", Resource(mem_mb, vcores), Resource(mem_mb, vcores))
             for i in range(racks * per_rack)]
    parts = {n.node_id: ("x" if i >= len(nodes) - partitioned else "") for i, n in enumerate(nodes)}
    summary = ClusterSummary(len(nodes), racks, Resource(mem_mb * len(nodes), vcores * len(nodes)),
                             Resource(mem_mb * len(nodes) // 2, vcores * len(nodes) // 2))
    return Cluster(nodes, parts, summary)


@dataclass
class PendingAsk:
    """An ask as the RM holds it: every host and rack entry, its partition."""

    ask: Ask
    partition: str = ""


def new_application(rng: random.Random, cluster: Cluster, app: int, submit: int, partition: str = "",
                    cached: bool = True) -> list[PendingAsk]:
    """A MapReduce-like application: a map ask naming hosts and their racks (some racks without relaxing, one ask
    not relaxing ANY), with input blocks (some cached), and a reduce-like ANY ask."""
    nodes = [n for n in cluster.nodes if cluster.partitions[n.node_id] == partition]
    out = []
    pending = rng.randint(2, 12)
    hosts = rng.sample(nodes, min(len(nodes), rng.randint(1, 8)))
    entries = {n.host: LocalityRequest(n.host, rng.randint(1, pending)) for n in hosts}
    for n in hosts:
        relax = rng.random() > 0.2
        entries[n.rack] = LocalityRequest(n.rack, rng.randint(0 if not relax else 1, pending), relax)
    blocks = tuple(BlockInfo(f"blk_{app}_{j}", 128 << 20, (n.host,), (n.host,) if cached and j % 2 == 0 else (),
                             (n.rack,)) for j, n in enumerate(hosts))
    out.append(PendingAsk(Ask(f"app{app}/1/0", f"application_1_{app:04d}", priority=1,
                              resource=Resource(1024 * rng.randint(1, 2), 1), num_containers=pending,
                              locality=tuple(entries.values()), submit_time_ms=submit,
                              job=JobMetadata(input_blocks=blocks), relax_locality=app % 7 != 3), partition))
    out.append(PendingAsk(Ask(f"app{app}/20/0", f"application_1_{app:04d}", priority=20,
                              resource=Resource(2048, 1), num_containers=rng.randint(0, 4), submit_time_ms=submit),
                          partition))
    return out


def rounds(rng: random.Random, cluster: Cluster, n_rounds: int, free_max_gb: int = 12):
    """Heartbeats in rounds: each round every node once, in a random order, with random free resources."""
    out = []
    for r in range(n_rounds):
        order = list(cluster.nodes)
        rng.shuffle(order)
        hb = []
        for k, n in enumerate(order):
            free = Resource(1024 * rng.randint(0, free_max_gb), rng.randint(0, 12))
            hb.append(Node(n.node_id, n.host, n.rack, n.total, free, timestamp_ms=1000 * (r + 1) + k))
        out.append(hb)
    return out


def on_node(ask: Ask, node: Node) -> Ask:
    """The ask as the plugin sends it in a single heartbeat of this node (Snapshots.Builder)."""
    kept = tuple(lr for lr in ask.locality
                 if (lr.resource_name == node.host and lr.num_containers > 0)
                 or (lr.resource_name == node.rack and (lr.num_containers > 0 or not lr.relax_locality)))
    names = len({lr.resource_name for lr in ask.locality} - {ANY})
    return Ask(ask.ask_id, ask.application_id, ask.attempt_id, ask.queue, ask.user, ask.priority,
               ask.allocation_request_id, ask.resource, ask.num_containers, kept, ask.submit_time_ms, ask.job,
               ask.relax_locality, locality_names=names)


def for_batch(ask: Ask, nodes: list[Node]) -> Ask:
    """The ask as a batch carries it: the entries of the batch's hosts and racks, the whole ask's name count."""
    places = {n.host for n in nodes} | {n.rack for n in nodes}
    kept = tuple(lr for lr in ask.locality if lr.resource_name in places)
    names = len({lr.resource_name for lr in ask.locality} - {ANY})
    return Ask(ask.ask_id, ask.application_id, ask.attempt_id, ask.queue, ask.user, ask.priority,
               ask.allocation_request_id, ask.resource, ask.num_containers, kept, ask.submit_time_ms, ask.job,
               ask.relax_locality, locality_names=names)


def book(pending: list[PendingAsk], node: Node, decision: ScheduleDecision) -> None:
    """The RM's bookkeeping (AppSchedulingInfo.allocate): node-local uses host, rack and ANY; rack-local rack and
    ANY; off-switch ANY."""
    by_id = {p.ask.ask_id: p for p in pending}
    for a in decision.assignments:
        ask = by_id[a.ask_id].ask
        n = a.count
        used = {ANY}
        if a.locality in (Locality.NODE_LOCAL, Locality.CACHE_LOCAL):
            used |= {node.host, node.rack}
        elif a.locality == Locality.RACK_LOCAL:
            used.add(node.rack)
        ask.locality = tuple(LocalityRequest(lr.resource_name, max(lr.num_containers - n, 0), lr.relax_locality)
                             if lr.resource_name in used else lr for lr in ask.locality)
        assert ask.num_containers >= n, f"{a.ask_id}: {n} containers given, {ask.num_containers} outstanding"
        ask.num_containers -= n


def live(pending: list[PendingAsk], partition: str) -> list[PendingAsk]:
    return [p for p in pending if p.ask.num_containers > 0 and p.partition == partition]


Placement = tuple[str, str, int, int]  # node id, ask id, count, locality


def placements_of(node: Node, decision: ScheduleDecision) -> list[Placement]:
    return [(node.node_id, a.ask_id, a.count, int(a.locality)) for a in decision.assignments]


def scenario(seed: int, n_rounds: int, partitioned: int = 0, apps_per_round: int = 2):
    """(cluster, rounds of heartbeats, applications arriving at the start of each round)."""
    rng = random.Random(seed)
    cluster = make_cluster(partitioned=partitioned)
    hbs = rounds(rng, cluster, n_rounds)
    arrivals = []
    app = 0
    for r in range(n_rounds):
        apps = []
        for _ in range(apps_per_round):
            part = "x" if partitioned and rng.random() < 0.25 else ""
            apps += new_application(rng, cluster, app, 10 * app, part)
            app += 1
        arrivals.append(apps)
    return cluster, hbs, arrivals


def drive_single(engine: Engine, cluster: Cluster, hbs, arrivals, remote=None) -> list[Placement]:
    """One ScheduleRequest per heartbeat (the wire form: only the node's entries), the RM booking each answer."""
    pending: list[PendingAsk] = []
    out: list[Placement] = []
    for r, hb in enumerate(hbs):
        pending += copy.deepcopy(arrivals[r])
        for node in hb:
            asks = [on_node(p.ask, node) for p in live(pending, cluster.partitions[node.node_id])]
            obs = ScheduleObservation(node, asks, cluster.summary, f"hb-{node.node_id}-{node.timestamp_ms}")
            if remote is not None:
                decision = remote.schedule_obs(obs)
            else:
                decision = engine.schedule(decode_schedule(encode_schedule(obs)))
            book(pending, node, decision)
            out += placements_of(node, decision)
    return out


def batch_request(pending: list[PendingAsk], cluster: Cluster, nodes: list[Node], batch_id: str,
                  columnar: bool = True):
    asks = [p for p in pending if p.ask.num_containers > 0]
    return encode_batch(nodes, [for_batch(p.ask, nodes) for p in asks], cluster.summary, batch_id,
                        [f"hb-{n.node_id}-{n.timestamp_ms}" for n in nodes],
                        [cluster.partitions[n.node_id] for n in nodes], [p.partition for p in asks], columnar)


def drive_batched(engine: Engine | None, cluster: Cluster, hbs, arrivals, batch_size: int,
                  remote=None, columnar: bool = True, max_views: int | None = None) -> list[Placement]:
    """The same heartbeats in ScheduleBatch calls of `batch_size` nodes (rounds are cut into batches), in-process or
    over gRPC (`remote`: a PolicyEngineClient), the RM booking every node's answer in order."""
    from policy_engine.batch import decode_batch_decision

    scheduler = None
    if engine is not None:
        scheduler = BatchScheduler(engine) if max_views is None else BatchScheduler(engine, max_views=max_views)
    pending: list[PendingAsk] = []
    out: list[Placement] = []
    for r, hb in enumerate(hbs):
        pending += copy.deepcopy(arrivals[r])
        for start in range(0, len(hb), batch_size):
            nodes = hb[start:start + batch_size]
            req = batch_request(pending, cluster, nodes, f"b{r}-{start}", columnar)
            if remote is not None:
                decision = decode_batch_decision(remote.schedule_batch(req))
            else:
                decision = scheduler.decide(scheduler.decode(req, req.SerializeToString()))
            assert not decision.refused_asks
            for node, res in zip(nodes, decision.results):
                assert res.node_id == node.node_id and not res.refusal, res
                d = ScheduleDecision(res.assignments)
                book(pending, node, d)
                out += placements_of(node, d)
    return out
