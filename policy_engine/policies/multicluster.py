"""RL-FC's (RL-FC, Sec. V-B) rule-based routing baselines: Random, SF-P, LF-P, SF-E, LF-E.

Each picks one buffered job and one cluster, as a pure function of the RouteObservation:
* job: the smallest (SF) or largest (LF) computing capacity requirement, read as the expected executor count of one
  execution (the mean of the 10-slot request distribution); ties go to the earliest job in the buffer;
* cluster: the lowest average occupation percentage over the latest 100 steps (-P), or the largest average number
  of available executors over them (-E), capacity * (1 - average occupation); ties go to the first cluster.
Random draws both uniformly from a hash of the request id, so it is reproducible and identical over gRPC.
"""

from __future__ import annotations

from policy_engine.policy import ROUTE, Policy, register
from policy_engine.routing import argmax_first, argmin_first, mean_occupations, mean_request, request_hash
from policy_engine.types import RouteDecision, RouteObservation


@register("random", "RL-FC Random: a uniformly random buffered job to a uniformly random cluster "
                    "(hash of the request id)", {ROUTE},
          families={"multicluster"})
class RandomRoute(Policy):
    name = "random"
    capabilities = frozenset({ROUTE})

    def route(self, obs: RouteObservation) -> RouteDecision:
        h = request_hash(obs.request_id, "random")
        job = h % len(obs.jobs)
        cluster = (h >> 32) % len(obs.clusters)
        return RouteDecision(job, obs.clusters[cluster].cluster_id)


class _RuleRoute(Policy):
    capabilities = frozenset({ROUTE})
    largest_first = False
    by_executors = False

    def route(self, obs: RouteObservation) -> RouteDecision:
        requests = [mean_request(j) for j in obs.jobs]
        job = argmax_first(requests) if self.largest_first else argmin_first(requests)
        occupation = mean_occupations(obs)
        if self.by_executors:
            avail = [(c.current_capacity or c.capacity) * (1.0 - o) for c, o in zip(obs.clusters, occupation)]
            cluster = argmax_first(avail)
        else:
            cluster = argmin_first(occupation)
        return RouteDecision(job, obs.clusters[cluster].cluster_id)


@register("sf-p", "RL-FC SF-P: smallest job first, to the cluster with the lowest average occupation "
                  "percentage over the past 100 steps", {ROUTE},
          families={"multicluster"})
class SmallestFirstP(_RuleRoute):
    name = "sf-p"


@register("lf-p", "RL-FC LF-P: largest job first, to the cluster with the lowest average occupation "
                  "percentage over the past 100 steps", {ROUTE},
          families={"multicluster"})
class LargestFirstP(_RuleRoute):
    name = "lf-p"
    largest_first = True


@register("sf-e", "RL-FC SF-E: smallest job first, to the cluster with the most available executors on "
                  "average over the past 100 steps", {ROUTE},
          families={"multicluster"})
class SmallestFirstE(_RuleRoute):
    name = "sf-e"
    by_executors = True


@register("lf-e", "RL-FC LF-E: largest job first, to the cluster with the most available executors on "
                  "average over the past 100 steps", {ROUTE},
          families={"multicluster"})
class LargestFirstE(_RuleRoute):
    name = "lf-e"
    largest_first = True
    by_executors = True
