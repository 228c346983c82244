"""The cluster tests run on a real Hadoop cluster in containers (docker_cluster/cluster.py), booted once per session.

They run whenever a Docker engine answers. Without one they are skipped, with the reason saying how to start one;
under CI (CI=true) an unreachable engine is a failure instead, so CI cannot pass without having run them.
Every container and the network are removed at the end, also when a test fails (or the boot itself does).
"""

from __future__ import annotations

import time
import uuid

import pytest

from docker_cluster import cluster as docker_cluster  # (docker_cluster/cluster.py, on the path from tests/conftest.py)
from docker_cluster import images  # (docker_cluster/images.py)


@pytest.fixture(scope="session")
def cluster(docker_engine):
    """One cluster for the whole session: images built (or found cached), then booted with ports picked by Docker
    on 127.0.0.1, a unique name, a short breaker open period so the recovery tests run quickly, and the fault proxy
    in front of the engine (docker_cluster/fault_proxy.py: the slow, invalid and netcut cases)."""
    t = time.monotonic()
    built = images.ensure_images()
    build_s = time.monotonic() - t
    spec = docker_cluster.ClusterSpec(name=f"yarnrl-test-{uuid.uuid4().hex[:6]}", policy="delay",
                                      nn_port=None, rm_port=None, metrics_port=None, grpc_port=None,
                                      breaker_open_ms=3000, fault_proxy=True,
                                      task_jvm_opts=docker_cluster.SHORT_LIVED_JVM_FLAGS)  # less CPU per job JVM
    cl = docker_cluster.Cluster(spec)
    t = time.monotonic()
    try:
        cl.up(timeout=600, build=False)
        cl.boot_seconds = time.monotonic() - t
        cl.build_seconds = build_s
        cl.images_built = [r.image for r in built if not r.cached]
        yield cl
    finally:
        cl.down(quiet=True)
        left = [c.name for c in cl.containers()] + [n.name for n in docker_engine.networks.list(names=[spec.network])]
        assert not left, f"left behind after the cluster tests: {left}"
