"""RL-LSFC's (RL-LSFC, Sec. 5) rule-based routing baselines: RAN, RR, MAF.

For all three the job is the one with the least worker request in the buffer: the average over clusters of the
executor count it most likely requests there (ties: the earliest job). The cluster:
* RAN: uniformly random, drawn from a hash of the request id (reproducible, identical over gRPC);
* RR: round-robin starting from a random cluster. A policy keeps no state, so its turn is a field of the request:
  RouteRequest.sequence = n, the decisions asked for before this one in the caller's stream (the emulator: jobs
  routed before it in the episode), and stream_id names the stream. RR sends decision n to cluster
  (start + n) mod C, start drawn from a hash of the stream. Older callers that send no sequence but a request id
  `<stream>:<n>` get the same (the engine reads the suffix); a request with neither goes to a cluster drawn from a
  hash of its id, i.e. a random one;
* MAF: the most available cluster relative to the job, argmax (1 - RO_i) * CAP_i / ER_i with RO_i the average
  occupation ratio over the past 100 steps, CAP_i the capacity in effect (elastic expansion included) and ER_i the
  job's most likely executor request on cluster i.
"""

from __future__ import annotations

from policy_engine.policy import ROUTE, Policy, register
from policy_engine.routing import (
    argmax_first,
    argmin_first,
    mean_occupations,
    most_likely_per_cluster,
    request_hash,
    worker_request,
)
from policy_engine.types import RouteDecision, RouteObservation


def least_request_job(obs: RouteObservation) -> int:
    return argmin_first([worker_request(j, obs) for j in obs.jobs])


@register("ran", "RL-LSFC RAN: least-request job to a uniformly random cluster (hash of the request id)", {ROUTE},
          families={"multicluster"})
class RandomCluster(Policy):
    name = "ran"
    capabilities = frozenset({ROUTE})

    def route(self, obs: RouteObservation) -> RouteDecision:
        cluster = request_hash(obs.request_id, "ran") % len(obs.clusters)
        return RouteDecision(least_request_job(obs), obs.clusters[cluster].cluster_id)


@register("rr", "RL-LSFC RR: least-request job, clusters in turn from a random start (turn: RouteRequest.sequence)",
          {ROUTE}, families={"multicluster"})
class RoundRobin(Policy):
    name = "rr"
    capabilities = frozenset({ROUTE})

    def route(self, obs: RouteObservation) -> RouteDecision:
        n_clusters = len(obs.clusters)
        seq = obs.sequence
        if seq is None:
            cluster = request_hash(obs.request_id, "rr") % n_clusters
        else:
            cluster = (request_hash(seq.stream, "rr-start") + seq.index) % n_clusters
        return RouteDecision(least_request_job(obs), obs.clusters[cluster].cluster_id)


@register("maf", "RL-LSFC MAF: least-request job to the cluster with the most available capacity relative to "
                 "its request, (1 - RO) * CAP / ER over the past 100 steps", {ROUTE},
          families={"multicluster"})
class MostAvailableFirst(Policy):
    name = "maf"
    capabilities = frozenset({ROUTE})

    def route(self, obs: RouteObservation) -> RouteDecision:
        j = least_request_job(obs)
        er = most_likely_per_cluster(obs.jobs[j], obs)
        score = [(1.0 - o) * (c.current_capacity or c.capacity) / max(e, 1)
                 for c, e, o in zip(obs.clusters, er, mean_occupations(obs))]
        return RouteDecision(j, obs.clusters[argmax_first(score)].cluster_id)
