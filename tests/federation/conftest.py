"""The federation tests run on a real YARN Federation in containers (docker_cluster/federation.py), booted once per session:
ZooKeeper, the 3.4.2 Router with the learned Router policy, two sub-clusters of different sizes, HDFS, the engine
and a client. Like tests/cluster: skipped with the reason when no Docker engine answers (a failure under CI=true),
and every container and the network are removed at the end, also when a test or the boot fails.
"""

from __future__ import annotations

import time
import uuid

import pytest

from docker_cluster import cluster as docker_cluster  # (docker_cluster/cluster.py, on the path from tests/conftest.py)
from docker_cluster import federation as docker_federation  # (docker_cluster/federation.py)
from docker_cluster import images  # (docker_cluster/images.py)


@pytest.fixture(scope="session")
def federation(docker_engine):
    """SC1 with 2048 MB, SC2 with 4096 MB: the built-in rule (most available memory) picks SC2 on an idle
    federation, while the engine's sf-p (lowest occupation share, ties to the first cluster) picks SC1, so where a
    job lands says who routed it. The Router's engine deadline is 500 ms (this machine's two cores are shared)
    and its breaker opens for 3 s."""
    images.ensure_federation_images()
    spec = docker_federation.FederationSpec(
        name=f"yarnrl-fedtest-{uuid.uuid4().hex[:6]}", sc_memory_mb=[2048, 4096], policy="sf-p",
        router_deadline_ms=500, router_breaker_open_ms=3000,
        task_jvm_opts=docker_cluster.SHORT_LIVED_JVM_FLAGS)  # the jobs' JVMs start with less CPU
    fed = docker_federation.Federation(spec)
    t = time.monotonic()
    try:
        fed.up(timeout=600, build=False)
        fed.boot_seconds = time.monotonic() - t
        yield fed
    finally:
        fed.down(quiet=True)
        left = [c.name for c in fed.containers()] + [
            n.name for n in docker_engine.networks.list(names=[spec.network])]
        assert not left, f"left behind after the federation tests: {left}"
