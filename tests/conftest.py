"""Shared fixtures: real `policy-engine serve` processes on loopback."""

from __future__ import annotations

import signal

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
