"""How an emulated cluster asks for decisions: in-process or over gRPC, with the same observation objects.

InProcessDriver calls an Engine directly; RemoteDriver sends the same observations, encoded by the shared codec,
to a real `policy-engine serve`. Both go through Engine (validation, opportunity counts, the safety clip), so a
fixed seed gives identical decisions in both modes.
"""

from __future__ import annotations

import json
import signal
from typing import Iterable

from policy_engine.engine import Engine
from policy_engine.policy import Policy, create
from policy_engine.types import Event, RouteDecision, RouteObservation, ScheduleDecision, ScheduleObservation


class EngineMismatch(ValueError):
    """The engine at --remote answers, but serves another policy than the one asked for."""


class Driver:
    mode = "abstract"
    policy_name = ""
    capabilities: frozenset[str] = frozenset()   # the served policy's (GetInfo's capabilities over gRPC)

    def schedule(self, obs: ScheduleObservation) -> ScheduleDecision:
        raise NotImplementedError

    def route(self, obs: RouteObservation) -> RouteDecision:
        raise NotImplementedError

    def report(self, events: Iterable[Event]) -> int:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class InProcessDriver(Driver):
    mode = "in-process"

    def __init__(self, policy: Policy, decision_log: str | None = None, log_rotate_mb: float | None = None,
                 deeprm=None):
        # The learner runs inline here (offline training, deterministic runs); `policy-engine serve` runs it in its
        # own thread. Both publish what they learned after each Report, so both modes decide alike.
        self.engine = Engine(policy, learning="inline", deeprm=deeprm)  # deeprm: a DeepRMViewConfig
        self.engine.attach_learner()
        self.policy_name = policy.name
        self.capabilities = frozenset(policy.capabilities)
        if decision_log is not None:
            # the same Parquet log as `policy-engine serve --decision-log`, written inline (nothing dropped)
            self.engine.attach_decision_log(decision_log, log_rotate_mb, threaded=False)
            schedule, route = self.engine.schedule_logged, self.engine.route_logged
            self.schedule = lambda obs: schedule(obs)[0]
            self.route = lambda obs: route(obs)[0]
        else:
            self.schedule = self.engine.schedule  # bound directly: the hot path of every emulator step
            self.route = self.engine.route

    def report(self, events: Iterable[Event]) -> int:
        return self.engine.report(events)

    def close(self) -> None:
        self.engine.close()


class RemoteDriver(Driver):
    mode = "remote"

    def __init__(self, target: str, timeout: float = 5.0, expect_policy: str | None = None, process=None,
                 connect_timeout: float = 30.0):
        """`timeout`: deadline of every call; `connect_timeout`: how long to wait for the engine to be SERVING."""
        from policy_engine.client import PolicyEngineClient

        self.client = PolicyEngineClient(target, timeout=timeout)
        self._process = process
        try:
            self.client.wait_ready(connect_timeout)
            info = self.client.info()
        except Exception:
            self.close()
            raise
        if expect_policy is not None and info.policy != expect_policy:
            self.close()
            raise EngineMismatch(f"the engine at {target} serves policy {info.policy!r}, not {expect_policy!r}")
        self.policy_name = info.policy
        self.capabilities = frozenset(info.capabilities)

    def schedule(self, obs: ScheduleObservation) -> ScheduleDecision:
        return self.client.schedule_obs(obs)

    def route(self, obs: RouteObservation) -> RouteDecision:
        return self.client.route_obs(obs)

    def report(self, events: Iterable[Event]) -> int:
        events = list(events)
        return self.client.report_events(events) if events else 0

    def close(self) -> None:
        self.client.close()
        if self._process is not None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(timeout=30)
            except Exception:
                self._process.kill()
            self._process = None


def make_driver(policy: str, model: str | None = None, remote: str | None = None,
                options: dict | None = None, timeout: float = 5.0, decision_log: str | None = None,
                log_rotate_mb: float | None = None, deeprm=None) -> Driver:
    """remote=None: in-process; remote="spawn": start a `policy-engine serve` child; else HOST:PORT of one, which
    must be SERVING within `timeout` seconds (also every call's deadline). `decision_log`: directory of the
    Parquet decision log, written in-process or by the spawned engine (an engine at HOST:PORT writes its own).
    `deeprm`: policy_engine.deeprm_view.DeepRMViewConfig for the engine (in-process or spawned)."""
    options = options or {}
    if remote is None:
        return InProcessDriver(create(policy, model=model, **options), decision_log, log_rotate_mb, deeprm)
    if remote == "spawn":
        from policy_engine.cli import start_engine_subprocess

        extra = (["--model", str(model)] if model else []) + (["--decision-log", str(decision_log)] if decision_log
                                                              else []) + (
            ["--log-rotate-mb", str(log_rotate_mb)] if decision_log and log_rotate_mb else []) + [
            arg for k, v in options.items() for arg in ("--set", f"{k}={v if isinstance(v, str) else json.dumps(v)}")]
        if deeprm is not None:
            extra += ["--deeprm-step-ms", str(deeprm.step_ms), "--deeprm-image", deeprm.image,
                      "--deeprm-default-runtime-ms", str(deeprm.default_runtime_ms)]
        proc, target = start_engine_subprocess(policy, extra)
        return RemoteDriver(target, timeout=timeout, expect_policy=policy, process=proc)
    if decision_log is not None:
        raise ValueError(f"the engine at {remote} writes its own decision log: start it with `policy-engine serve "
                         "--decision-log DIR`")
    return RemoteDriver(remote, timeout=timeout, expect_policy=policy, connect_timeout=timeout)
