"""Hand-built heartbeats for tests."""

from __future__ import annotations

from policy_engine.types import (
    Ask,
    BlockInfo,
    ClusterSummary,
    JobMetadata,
    LocalityRequest,
    Node,
    Resource,
    ScheduleObservation,
)

GB = 1024


def node(name: str = "n1", rack: str = "/r1", mem_gb: int = 8, vcores: int = 8, free_gb: int | None = None,
         free_vcores: int | None = None) -> Node:
    free_gb = mem_gb if free_gb is None else free_gb
    return Node(node_id=f"{name}:8041", host=name, rack=rack, total=Resource(mem_gb * GB, vcores),
                unallocated=Resource(free_gb * GB, vcores if free_vcores is None else free_vcores))


def map_ask(ask_id: str, app: str, hosts: dict[str, int], racks: dict[str, int], total: int, submit: int = 0,
            mem_gb: int = 1, priority: int = 20, cached_on: tuple[str, ...] = ()) -> Ask:
    locality = tuple(LocalityRequest(h, n) for h, n in hosts.items()) + tuple(
        LocalityRequest(r, n) for r, n in racks.items())
    job = None
    if cached_on:
        job = JobMetadata(input_blocks=(BlockInfo("blk_1", 128 << 20, tuple(hosts), cached_on),))
    return Ask(ask_id=ask_id, application_id=app, priority=priority, resource=Resource(mem_gb * GB, 1),
               num_containers=total, locality=locality, submit_time_ms=submit, job=job)


def observe(n: Node, asks: list[Ask], num_nodes: int = 4, num_racks: int = 2, request_id: str = "") -> ScheduleObservation:
    return ScheduleObservation(node=n, asks=asks, cluster=ClusterSummary(num_nodes=num_nodes, num_racks=num_racks),
                               request_id=request_id)
