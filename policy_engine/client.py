"""Python clients of the policy engine, every call with a deadline.

`PolicyEngineClient` (blocking) is what tests, the emulator's remote driver and scripts use;
`AsyncPolicyEngineClient` is for load generators that keep many calls in flight. Both speak protobuf messages and,
for convenience, observation objects (`schedule_obs`, `route_obs`), converted with the same codec the server uses.
Failures surface as grpc.RpcError with the server's status code and message. `security`
(policy_engine.security.ClientSecurity) reaches an engine served with TLS, mutual TLS and/or a bearer token.
"""

from __future__ import annotations

import time
from typing import AsyncIterable, Iterable, Iterator

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from policy_engine.codec import (
    decode_route_decision,
    decode_schedule_decision,
    encode_event,
    encode_route,
    encode_schedule,
)
from policy_engine.proto import SERVICE_NAME, pb, pb_grpc
from policy_engine.security import ClientSecurity, secure_aio_channel, secure_channel
from policy_engine.types import Event, RouteDecision, RouteObservation, ScheduleDecision, ScheduleObservation

DEFAULT_TIMEOUT_S = 1.0
_OPTIONS = [("grpc.max_receive_message_length", 16 << 20), ("grpc.max_send_message_length", 16 << 20)]


class EngineUnavailable(TimeoutError):
    """No policy engine answered at the address in time (nothing listening, another protocol, not SERVING)."""


class PolicyEngineClient:
    def __init__(self, target: str = "127.0.0.1:50051", timeout: float = DEFAULT_TIMEOUT_S,
                 security: ClientSecurity | None = None):
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, not {timeout}")
        self.target = target
        self.timeout = timeout
        self.security = security
        # the intercepted channel adds the token to every call; the raw one is what close() closes
        self.channel, self._raw_channel = secure_channel(target, _OPTIONS, security)
        self.stub = pb_grpc.PolicyEngineStub(self.channel)
        self._health = health_pb2_grpc.HealthStub(self.channel)

    def __enter__(self) -> PolicyEngineClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._raw_channel.close()

    def _t(self, timeout: float | None) -> float:
        return self.timeout if timeout is None else timeout

    # ------------------------------------------------------------ raw messages

    def schedule(self, request: pb.ScheduleRequest, timeout: float | None = None) -> pb.ScheduleResponse:
        return self.stub.Schedule(request, timeout=self._t(timeout))

    def schedule_stream(self, requests: Iterable[pb.ScheduleRequest],
                        timeout: float | None = None) -> Iterator[pb.ScheduleResponse]:
        """Answers in request order; `timeout` bounds the whole stream."""
        return self.stub.ScheduleStream(iter(requests), timeout=timeout)

    def schedule_batch(self, request: pb.ScheduleBatchRequest,
                       timeout: float | None = None) -> pb.ScheduleBatchResponse:
        """Many node heartbeats in one call (policy_engine.batch); needs GetInfo capability "schedule-batch"."""
        return self.stub.ScheduleBatch(request, timeout=self._t(timeout))

    def route(self, request: pb.RouteRequest, timeout: float | None = None) -> pb.RouteResponse:
        return self.stub.Route(request, timeout=self._t(timeout))

    def route_stream(self, requests: Iterable[pb.RouteRequest],
                     timeout: float | None = None) -> Iterator[pb.RouteResponse]:
        return self.stub.RouteStream(iter(requests), timeout=timeout)

    def report(self, events: Iterable[pb.Event], timeout: float | None = None) -> int:
        return self.stub.Report(pb.ReportRequest(events=list(events)), timeout=self._t(timeout)).accepted

    def info(self, timeout: float | None = None) -> pb.GetInfoResponse:
        return self.stub.GetInfo(pb.GetInfoRequest(), timeout=self._t(timeout))

    def info_counters(self, timeout: float | None = None) -> tuple[pb.GetInfoResponse, dict[str, int]]:
        """GetInfo plus the engine's counters it sends as trailing metadata (`yarnrl-*` keys, integers)."""
        resp, call = self.stub.GetInfo.with_call(pb.GetInfoRequest(), timeout=self._t(timeout))
        counters = {}
        for key, value in call.trailing_metadata() or ():
            if key.startswith("yarnrl-"):
                try:
                    counters[key.removeprefix("yarnrl-").replace("-", "_")] = int(value)
                except ValueError:
                    pass
        return resp, counters

    # ------------------------------------------------------------ observation objects

    def schedule_obs(self, obs: ScheduleObservation, timeout: float | None = None) -> ScheduleDecision:
        return decode_schedule_decision(self.schedule(encode_schedule(obs), timeout))

    def route_obs(self, obs: RouteObservation, timeout: float | None = None) -> RouteDecision:
        return decode_route_decision(self.route(encode_route(obs), timeout))

    def report_events(self, events: Iterable[Event], timeout: float | None = None) -> int:
        """Report event dataclasses (policy_engine.types); returns how many the engine accepted."""
        return self.report([encode_event(e) for e in events], timeout)

    # ------------------------------------------------------------ health

    def health(self, service: str = SERVICE_NAME, timeout: float | None = None) -> str:
        resp = self._health.Check(health_pb2.HealthCheckRequest(service=service), timeout=self._t(timeout))
        return health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status)

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Block until the engine reports SERVING; raise EngineUnavailable (a TimeoutError) with the last failure."""
        deadline = time.monotonic() + timeout
        last = "no answer"
        refusal = ""  # the last failure that was not a deadline: says more (a TLS handshake refused under load)
        while time.monotonic() < deadline:
            try:
                status = self.health(timeout=min(1.0, max(deadline - time.monotonic(), 0.01)))
                if status == "SERVING":
                    return
                last = status
            except grpc.RpcError as e:
                last = f"{e.code().name}: {e.details()}"
                if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                    refusal = last
                if e.code() == grpc.StatusCode.UNAUTHENTICATED:
                    break  # a wrong or missing token does not get better by waiting
            time.sleep(0.05)
        from policy_engine.security import explain_failure

        last = refusal or last
        hint = explain_failure(last, self.security) or "is `policy-engine serve` running there?"
        raise EngineUnavailable(f"no policy engine serving at {self.target} after {timeout:g}s ({last}); {hint}")


class AsyncPolicyEngineClient:
    """grpc.aio client: many calls in flight from one thread (benchmarks, async drivers)."""

    def __init__(self, target: str = "127.0.0.1:50051", timeout: float = DEFAULT_TIMEOUT_S,
                 security: ClientSecurity | None = None):
        self.target = target
        self.timeout = timeout
        self.channel = secure_aio_channel(target, _OPTIONS, security)
        self.stub = pb_grpc.PolicyEngineStub(self.channel)

    async def __aenter__(self) -> AsyncPolicyEngineClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def close(self) -> None:
        await self.channel.close()

    async def schedule(self, request: pb.ScheduleRequest, timeout: float | None = None) -> pb.ScheduleResponse:
        return await self.stub.Schedule(request, timeout=self.timeout if timeout is None else timeout)

    def schedule_stream(self, requests: AsyncIterable[pb.ScheduleRequest] | Iterable[pb.ScheduleRequest],
                        timeout: float | None = None):
        return self.stub.ScheduleStream(requests, timeout=timeout)

    async def schedule_batch(self, request: pb.ScheduleBatchRequest,
                             timeout: float | None = None) -> pb.ScheduleBatchResponse:
        return await self.stub.ScheduleBatch(request, timeout=self.timeout if timeout is None else timeout)

    async def route(self, request: pb.RouteRequest, timeout: float | None = None) -> pb.RouteResponse:
        return await self.stub.Route(request, timeout=self.timeout if timeout is None else timeout)
