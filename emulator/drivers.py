"""How an emulated cluster asks for decisions: in-process or over gRPC, with the same observation objects.

InProcessDriver calls an Engine directly; RemoteDriver sends the same observations, encoded by the shared codec,
to a real `policy-engine serve`. Both go through Engine (validation, opportunity counts, the safety clip), so a
fixed seed gives identical decisions in both modes. `batched=True` sends every heartbeat through the batched path
instead (ScheduleBatch, policy_engine.batch; a batch of the one node the emulator is deciding for, since it needs
each answer before it moves on), in-process or over gRPC alike.
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


class BatchRefusal(ValueError):
    """The batched path refused the heartbeat's node (its message names the node and the field)."""


def one_node_batch(obs: ScheduleObservation):
    from policy_engine.batch import encode_batch

    return encode_batch([obs.node], obs.asks, obs.cluster, obs.request_id, [obs.request_id])


def decision_of(results) -> ScheduleDecision:
    (r,) = results
    if r.refusal:
        raise BatchRefusal(r.refusal)
    return ScheduleDecision(list(r.assignments))


class InProcessDriver(Driver):
    mode = "in-process"

    def __init__(self, policy: Policy, decision_log: str | None = None, log_rotate_mb: float | None = None,
                 deeprm=None, batched: bool = False):
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
        if batched:
            from policy_engine.batch import BatchScheduler

            batcher = BatchScheduler(self.engine)
            self.mode = "in-process batched"
            self.schedule = lambda obs: decision_of(batcher.decide(batcher.decode(one_node_batch(obs))).results)

    def report(self, events: Iterable[Event]) -> int:
        return self.engine.report(events)

    def close(self) -> None:
        self.engine.close()


class RemoteDriver(Driver):
    mode = "remote"

    def __init__(self, target: str, timeout: float = 5.0, expect_policy: str | None = None, process=None,
                 connect_timeout: float = 30.0, batched: bool = False):
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
        if batched:
            if "schedule-batch" not in self.capabilities:
                self.close()
                raise EngineMismatch(f"the engine at {target} does not speak ScheduleBatch (GetInfo capabilities: "
                                     f"{', '.join(sorted(self.capabilities))})")
            from policy_engine.batch import decode_batch_decision

            self.mode = "remote batched"
            client = self.client
            self.schedule = lambda obs: decision_of(
                decode_batch_decision(client.schedule_batch(one_node_batch(obs))).results)

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


class ShadowDriver(Driver):
    """Shadow mode as the plugin does it (yarn_plugin/README.md, "Shadow mode"): every heartbeat goes to the engine
    as a shadow request (ScheduleRequest.shadow) whose answer is not applied; `native`, YARN's stand-in, places the
    containers; each ContainerStarted is reported with the decision_id of the shadow decision of the heartbeat it
    was placed on, so the engine can compare its choices with what was placed."""

    mode = "shadow"

    def __init__(self, engine: RemoteDriver, native: Driver, remember: int = 200_000):
        self.engine, self.native = engine, native
        self.policy_name = native.policy_name
        self.capabilities = native.capabilities
        self._placed: dict[tuple[str, str], str] = {}
        self._remember = remember

    def schedule(self, obs: ScheduleObservation) -> ScheduleDecision:
        from policy_engine.codec import encode_schedule

        req = encode_schedule(obs)
        req.shadow = True
        decision_id = self.engine.client.schedule(req).decision_id
        decision = self.native.schedule(obs)
        node = obs.node.node_id
        for a in decision.assignments:
            self._placed[(node, a.ask_id)] = decision_id
        if len(self._placed) > self._remember:
            self._placed.clear()
        return decision

    def report(self, events: Iterable[Event]) -> int:
        events = list(events)
        for ev in events:
            if ev.kind == "container_started" and not ev.decision_id:
                ev.decision_id = self._placed.get((ev.node_id, ev.ask_id), "")
        self.native.report(events)
        return self.engine.report(events)

    def close(self) -> None:
        self.native.close()
        self.engine.close()


def make_driver(policy: str, model: str | None = None, remote: str | None = None,
                options: dict | None = None, timeout: float = 5.0, decision_log: str | None = None,
                log_rotate_mb: float | None = None, deeprm=None, shadow: str | None = None,
                batched: bool = False) -> Driver:
    """remote=None: in-process; remote="spawn": start a `policy-engine serve` child; else HOST:PORT of one, which
    must be SERVING within `timeout` seconds (also every call's deadline). `decision_log`: directory of the
    Parquet decision log, written in-process or by the spawned engine (an engine at HOST:PORT writes its own).
    `deeprm`: algorithms.deeprm.view.DeepRMViewConfig for the engine (in-process or spawned).
    `shadow`: a policy placed in process as YARN would (e.g. delay) while `policy` is asked in shadow mode at
    `remote` (a ShadowDriver)."""
    if shadow is not None:
        if remote is None:
            raise ValueError("shadow mode asks an engine over gRPC: give remote (HOST:PORT or 'spawn')")
        engine = make_driver(policy, model, remote, options, timeout, decision_log, log_rotate_mb, deeprm)
        return ShadowDriver(engine, InProcessDriver(create(shadow)))
    options = options or {}
    if remote is None:
        return InProcessDriver(create(policy, model=model, **options), decision_log, log_rotate_mb, deeprm,
                               batched=batched)
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
        return RemoteDriver(target, timeout=timeout, expect_policy=policy, process=proc, batched=batched)
    if decision_log is not None:
        raise ValueError(f"the engine at {remote} writes its own decision log: start it with `policy-engine serve "
                         "--decision-log DIR`")
    return RemoteDriver(remote, timeout=timeout, expect_policy=policy, connect_timeout=timeout, batched=batched)
