"""Shared fixtures: real `policy-engine serve` processes on loopback; the Docker engine the container tests use."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from policy_engine.cli import start_engine_subprocess
from policy_engine.client import PolicyEngineClient


class RunningEngine:
    def __init__(self, policy: str, extra: list[str] | None = None, security=None):
        self.proc, self.target = start_engine_subprocess(policy, extra)
        self.client = PolicyEngineClient(self.target, timeout=5.0, security=security)
        self.client.wait_ready(30)

    def stop(self, sig=signal.SIGTERM, timeout: float = 30) -> int:
        self.client.close()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)


@pytest.fixture(scope="module")
def engine_factory():
    """Start engines on demand; all are stopped at the end of the module."""
    started: list[RunningEngine] = []

    def start(policy: str, *extra: str, security=None) -> RunningEngine:
        """`security`: the ClientSecurity the fixture's own client (and readiness wait) uses."""
        e = RunningEngine(policy, list(extra), security)
        started.append(e)
        return e

    yield start
    for e in started:
        if e.proc.poll() is None:
            e.stop()


# benchmarks/*.py are scripts that import their siblings (`import real_locality`); the tests import them from here.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")  # Ryuk's image would come from a registry
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def docker_engine():
    """The Docker engine (docker_cluster/images.py connect()); the container tests skip with the reason saying how to start
    one when none answers, and fail instead under CI (CI=true), so CI cannot pass without having run them."""
    from docker_cluster import images  # docker_cluster/images.py

    try:
        return images.connect()
    except images.DockerUnavailable as e:
        if _in_ci():
            pytest.fail(f"CI=true and {e}", pytrace=False)
        pytest.skip(str(e))
