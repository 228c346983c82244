"""Read locality of a map task on a node, and a per-candidate state for learned locality schedulers.

CLQLMRS names five states of a task placed on a worker node, best first:

  CL  the node holds a cached replica of the task's input block           reward +1
  DL  the node holds a disk replica                                        reward +0.5
  CRL the node shares a rack with the node that caches the block           reward -0.25
  DRL the node shares a rack with a disk replica                           reward -0.5
  NO  none of these (the block is read across racks)                       reward -1

(Table 2; the paper scales each weight by the count of tasks in that state over all tasks.) The emulator's
ApplicationMaster, the ACL policy, the gymnasium environment and the CLQLMRS learner all classify placements with
the functions here, from the protocol's own data (JobMetadata.input_blocks: hosts, cached_hosts, racks), so a
learned policy sees in production exactly the state it was trained on.

`candidate_features` is the stable featurisation of one Schedule observation: one row per ask, FEATURE_NAMES
columns, float32 in [0, 1]. Append new columns at the end only (bump FEATURES_VERSION) so saved Q-tables and
networks keep their meaning.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

from policy_engine.types import ANY, Ask, BlockInfo, Locality, Node, ScheduleObservation


class ReadLocality(IntEnum):
    CL = 0
    DL = 1
    CRL = 2
    DRL = 3
    NO = 4


NUM_STATES = len(ReadLocality)
# CLQLMRS, Table 2: reward weight of each state.
REWARD = np.array([1.0, 0.5, -0.25, -0.5, -1.0], dtype=np.float64)
# The protocol's coarser levels (yarnrl.v1.Locality) for each state.
TO_PROTOCOL = (Locality.CACHE_LOCAL, Locality.NODE_LOCAL, Locality.RACK_LOCAL, Locality.RACK_LOCAL,
               Locality.OFF_SWITCH)

FEATURES_VERSION = 1
FEATURE_NAMES = (
    "state_cl", "state_dl", "state_crl", "state_drl", "state_no",  # one-hot best state of this job on this node
    "cache_local_share",      # pending blocks cached on this node / pending blocks
    "node_local_share",       # pending blocks with any replica (disk or cache) on this node / pending blocks
    "cached_fraction",        # pending blocks cached anywhere / pending blocks (ACL's cached input fraction)
    "pending",                # outstanding containers / 100, capped at 1
    "missed_opportunities",   # heartbeats offered since the last local assignment / (4 x nodes), capped at 1
    "fits",                   # one container of the ask fits the node's unallocated resources
    "node_free_memory",       # node unallocated memory / node total memory
    "has_input",              # the ask carries input blocks (map tasks), 0 for reduces and the like
    "queue_position",         # FIFO rank among the observation's asks / number of asks (0 = head of line)
)
NUM_FEATURES = len(FEATURE_NAMES)


def _on_node(name_list: tuple[str, ...], node: Node) -> bool:
    return node.host in name_list or node.node_id in name_list


def read_locality(block: BlockInfo, node: Node) -> ReadLocality:
    """State of reading `block` on `node`. Rack of a cached replica: the rack of that host in block.racks."""
    if _on_node(block.cached_hosts, node):
        return ReadLocality.CL
    if _on_node(block.hosts, node):
        return ReadLocality.DL
    racks = block.racks
    if racks and node.rack:
        for h in block.cached_hosts:
            try:
                if racks[block.hosts.index(h)] == node.rack:
                    return ReadLocality.CRL
            except (ValueError, IndexError):
                continue
        if node.rack in racks:
            return ReadLocality.DRL
    return ReadLocality.NO


def state_counts(ask: Ask, node: Node) -> np.ndarray:
    """How many of the ask's input blocks would be read in each state on this node, shape (5,)."""
    counts = np.zeros(NUM_STATES, dtype=np.int64)
    job = ask.job
    if job is None or not job.input_blocks:
        return counts
    for b in job.input_blocks:
        counts[read_locality(b, node)] += 1
    return counts


def cache_local_count(ask: Ask, node: Node) -> int:
    """How many of the ask's input blocks have their cached replica on this node (the CL count, cheaply)."""
    job = ask.job
    if job is None or not job.input_blocks:
        return 0
    host, node_id = node.host, node.node_id
    return sum(1 for b in job.input_blocks if b.cached_hosts and (host in b.cached_hosts or node_id in b.cached_hosts))


def candidate_state(ask: Ask, node: Node, counts: np.ndarray | None = None) -> ReadLocality:
    """Best state the ask can reach on this node (the ApplicationMaster runs its best-placed task there).

    Without input blocks the ask's locality entries decide: a host entry for the node counts as DL, one for its
    rack as DRL, otherwise NO (reduces and other ANY-only asks).
    """
    if counts is None:
        job = ask.job
        counts = state_counts(ask, node) if job is not None and job.input_blocks else None
    if counts is not None:  # (None: no input blocks, all zeros: the entries decide, without numpy per candidate)
        nz = np.flatnonzero(counts)
        if nz.size:
            return ReadLocality(int(nz[0]))
    for lr in ask.locality:
        if lr.num_containers > 0 and (lr.resource_name == node.host or lr.resource_name == node.node_id):
            return ReadLocality.DL
    for lr in ask.locality:
        if lr.num_containers > 0 and lr.resource_name == node.rack and lr.resource_name != ANY:
            return ReadLocality.DRL
    return ReadLocality.NO


def cached_fraction(ask: Ask) -> float:
    """Share of the ask's input blocks that have a cached replica somewhere (0 without input blocks)."""
    job = ask.job
    if job is None or not job.input_blocks:
        return 0.0
    return sum(1 for b in job.input_blocks if b.cached_hosts) / len(job.input_blocks)


def candidate_features(obs: ScheduleObservation, asks: list[Ask] | None = None) -> np.ndarray:
    """One row of FEATURE_NAMES per ask (default: obs.asks in their order), float32 in [0, 1]."""
    asks = obs.asks if asks is None else asks
    node = obs.node
    out = np.zeros((len(asks), NUM_FEATURES), dtype=np.float32)
    if not asks:
        return out
    order = sorted(range(len(obs.asks)), key=lambda i: (obs.asks[i].submit_time_ms, obs.asks[i].application_id,
                                                        obs.asks[i].priority))
    rank = {obs.asks[i].ask_id: r for r, i in enumerate(order)}
    nodes = max(obs.cluster.num_nodes, 1)
    total_mem = node.total.memory_mb
    free_mem = node.unallocated.memory_mb / total_mem if total_mem > 0 else 0.0
    for row, ask in enumerate(asks):
        counts = state_counts(ask, node)
        out[row, candidate_state(ask, node, counts)] = 1.0
        blocks = int(counts.sum())
        if blocks:
            out[row, 5] = counts[ReadLocality.CL] / blocks
            out[row, 6] = (counts[ReadLocality.CL] + counts[ReadLocality.DL]) / blocks
            out[row, 7] = cached_fraction(ask)
            out[row, 12] = 1.0
        out[row, 8] = min(ask.num_containers / 100.0, 1.0)
        out[row, 9] = min(ask.scheduling_opportunities / (4.0 * nodes), 1.0)
        out[row, 10] = 1.0 if ask.num_containers > 0 and ask.resource.fits_in(node.unallocated) else 0.0
        out[row, 11] = free_mem
        out[row, 13] = rank.get(ask.ask_id, 0) / len(obs.asks)
    return out
