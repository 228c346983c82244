"""HDFS as a MapReduce scheduler sees it: racks, DataNodes, block replicas and the centralized cache.

Block placement follows BlockPlacementPolicyDefault for a writer that runs on a DataNode (HiBench's data
generators are MapReduce jobs, so every block is written from some DataNode): the first replica on the writer's
node, the second on a node of another rack, the third on another node of the second replica's rack.

The centralized cache (HDFS-4949, `hdfs cacheadmin -addDirective -replication 1`, CLQLMRS's setting) is filled
the way the NameNode's CacheReplicationMonitor fills it: blocks in file order, each cached on one of the
DataNodes that hold a replica, picked at random weighted by that DataNode's remaining cache capacity
(`dfs.datanode.max.locked.memory`, the per-node limit); a block no replica holder has room for stays uncached.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policy_engine.types import BlockInfo

MB = 1 << 20
GB = 1 << 30


@dataclass(frozen=True)
class Topology:
    """DataNodes (which are also NodeManagers) and their racks. Index i is host `hosts[i]` in rack `rack_of[i]`."""

    hosts: tuple[str, ...]
    racks: tuple[str, ...]          # distinct rack names
    rack_of: np.ndarray             # (N,) int: rack index of each host

    @classmethod
    def odd_even(cls, num_nodes: int = 6, num_racks: int = 2) -> "Topology":
        """CLQLMRS's layout: dn1, dn3, dn5 in /rack1 and dn2, dn4, dn6 in /rack2 (generally: i mod racks)."""
        if num_nodes < 2 or num_racks < 1 or num_racks > num_nodes:
            raise ValueError(f"need 2 <= nodes and 1 <= racks <= nodes, got {num_nodes} nodes, {num_racks} racks")
        hosts = tuple(f"dn{i + 1}" for i in range(num_nodes))
        racks = tuple(f"/rack{r + 1}" for r in range(num_racks))
        return cls(hosts, racks, np.arange(num_nodes) % num_racks)

    @property
    def num_nodes(self) -> int:
        return len(self.hosts)


@dataclass(frozen=True)
class InputFile:
    """One HDFS file: its blocks, their replica hosts and cached replica."""

    block_bytes: np.ndarray   # (B,) int64 length of each block
    replicas: np.ndarray      # (B, R) int: host index of each disk replica
    cached: np.ndarray        # (B,) int: host index of the cached replica, -1 when not cached
    infos: tuple[BlockInfo, ...]  # the same, as the protocol's BlockInfo (what the NameNode reports)

    @property
    def num_blocks(self) -> int:
        return int(self.block_bytes.shape[0])

    @property
    def cached_fraction(self) -> float:
        return float((self.cached >= 0).mean()) if self.num_blocks else 0.0


def place_replicas(rng: np.random.Generator, topo: Topology, num_blocks: int, replication: int = 3,
                   writers: np.ndarray | None = None) -> np.ndarray:
    """Rack-aware placement of `replication` replicas per block (writer's node, remote rack, same remote rack).

    `writers`: the DataNode writing each block, cycled over the blocks (e.g. the reducers of the job that wrote
    the file); by default a random DataNode per block (a data generator's map tasks)."""
    n = topo.num_nodes
    if not 1 <= replication <= n:
        raise ValueError(f"replication {replication} must be between 1 and the number of DataNodes ({n})")
    rack_of = topo.rack_of
    out = np.empty((num_blocks, replication), dtype=np.int64)
    nodes = np.arange(n)
    for b in range(num_blocks):
        writer = int(writers[b % len(writers)]) if writers is not None and len(writers) else int(rng.integers(n))
        chosen = [writer]
        if replication >= 2:
            remote = nodes[rack_of != rack_of[writer]]
            if remote.size == 0:  # single rack: any other node
                remote = nodes[nodes != writer]
            second = int(rng.choice(remote))
            chosen.append(second)
        while len(chosen) < replication:
            # Third replica: same rack as the second, another node; later ones (or a full rack): any unused node.
            same = [int(x) for x in nodes[rack_of == rack_of[chosen[1]]] if x not in chosen] if len(chosen) == 2 else []
            pool = same or [int(x) for x in nodes if x not in chosen]
            chosen.append(int(rng.choice(pool)))
        out[b] = chosen
    return out


def fill_cache(rng: np.random.Generator, replicas: np.ndarray, block_bytes: np.ndarray, per_node_limit: int,
               num_nodes: int) -> np.ndarray:
    """Cache replication 1: each block, in file order, on one replica holder chosen by remaining cache capacity."""
    remaining = np.full(num_nodes, int(per_node_limit), dtype=np.int64)
    cached = np.full(block_bytes.shape[0], -1, dtype=np.int64)
    if per_node_limit <= 0:
        return cached
    for b in range(block_bytes.shape[0]):
        holders = replicas[b]
        room = remaining[holders]
        fits = room >= block_bytes[b]
        if not fits.any():
            continue
        weights = np.where(fits, room, 0).astype(float)
        target = int(holders[rng.choice(holders.shape[0], p=weights / weights.sum())])
        cached[b] = target
        remaining[target] -= block_bytes[b]
    return cached


def make_input(rng: np.random.Generator, topo: Topology, input_bytes: int, block_bytes: int,
               cache_bytes_per_node: int, replication: int = 3, name: str = "input",
               writers: np.ndarray | None = None) -> InputFile:
    """Write one file of `input_bytes` in blocks of `block_bytes`, then apply a cache directive to it."""
    if input_bytes <= 0 or block_bytes <= 0:
        raise ValueError(f"input and block size must be positive, got {input_bytes} and {block_bytes}")
    full, rest = divmod(int(input_bytes), int(block_bytes))
    sizes = [block_bytes] * full + ([rest] if rest else [])
    lengths = np.asarray(sizes, dtype=np.int64)
    replicas = place_replicas(rng, topo, lengths.shape[0], replication, writers)
    cached = fill_cache(rng, replicas, lengths, cache_bytes_per_node, topo.num_nodes)
    hosts, racks = topo.hosts, topo.racks
    infos = tuple(
        BlockInfo(
            block_id=f"{name}_blk_{b:05d}",
            length=int(lengths[b]),
            hosts=tuple(hosts[h] for h in replicas[b]),
            cached_hosts=(hosts[int(cached[b])],) if cached[b] >= 0 else (),
            racks=tuple(racks[topo.rack_of[h]] for h in replicas[b]),
        )
        for b in range(lengths.shape[0])
    )
    return InputFile(lengths, replicas, cached, infos)
