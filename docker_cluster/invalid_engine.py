#!/usr/bin/env python3
"""A policy engine whose every Schedule answer is invalid: the plugin must refuse each one, count it in
FallbacksInvalidAnswer and schedule that heartbeat natively.

It speaks the real protocol (the generated stubs of policy_engine/_generated, grpc.health.v1 SERVING, GetInfo with
the protocol version, Report accepted), so the plugin's handshake and health check pass and only the answers are
wrong. The answers rotate through four faults the plugin's re-validation (Snapshots.check) must catch:

    over_allocate   every ask gets 1000 containers more than it has outstanding (beyond the node's free resources)
    unknown_ask     a container for an ask id the request does not have
    wrong_request   the answer names another request id
    zero_count      an assignment of 0 containers

With `--kinds wait` it is instead an engine that only waits: every answer valid and empty (a bad model, a policy
with an unbounded delay). The plugin must not let that starve an ask: past its wait cap (yarn_plugin WaitCap) the
ask is scheduled natively, counted in FallbacksWaitHeartbeats / FallbacksWaitTime (issue 23). The container
cluster runs one on port 50062 beside the invalid one; benchmarks/cluster_faults.py's `waits` case points there.

The engine's own safety layer (clip_schedule) would repair such answers, which is why this is a separate server
rather than a policy. In the container cluster it runs inside the fault proxy's container (docker_cluster/cluster.py) and
benchmarks/cluster_faults.py's `invalid` case points the proxy at it.

    python -m docker_cluster.invalid_engine --host 127.0.0.1 --port 50061
"""

from __future__ import annotations

import argparse
import itertools
import sys
import threading
from concurrent import futures

KINDS = ("over_allocate", "unknown_ask", "wrong_request", "zero_count")
WAIT = "wait"  # not invalid: an empty answer, every time (`--kinds wait`)


def invalid_answer(req, kind: str):
    """The ScheduleResponse of one fault `kind` for a ScheduleRequest (pure, unit-tested)."""
    from policy_engine.proto import pb

    resp = pb.ScheduleResponse(request_id=req.request_id, decision_id=f"invalid-{kind}", policy="invalid-answers",
                               model_version="invalid")
    asks = list(req.asks)
    if kind == "over_allocate":
        for ask in asks:
            resp.assignments.add(ask_id=ask.ask_id, count=ask.num_containers + 1000)
    elif kind == "unknown_ask":
        resp.assignments.add(ask_id="no-such-ask-" + "-".join(a.ask_id for a in asks[:1]), count=1)
    elif kind == "wrong_request":
        resp.request_id = req.request_id + "-not-this-one"
        for ask in asks[:1]:
            resp.assignments.add(ask_id=ask.ask_id, count=1)
    elif kind == "zero_count":
        for ask in asks[:1]:
            resp.assignments.add(ask_id=ask.ask_id, count=0)
    elif kind == WAIT:
        resp.decision_id, resp.policy = "wait", "only-waits"
    else:
        raise ValueError(f"unknown kind {kind!r}; known: {', '.join(KINDS + (WAIT,))}")
    return resp


def build_server(host: str, port: int, kinds: tuple[str, ...] = KINDS):
    """A started grpc.Server (and its bound port) answering invalid schedules, rotating through `kinds`."""
    import grpc
    from grpc_health.v1 import health, health_pb2, health_pb2_grpc

    from policy_engine import PROTOCOL_VERSION
    from policy_engine.policy import REPORT_CAPABILITY
    from policy_engine.proto import SERVICE_NAME, pb, pb_grpc

    rotation = itertools.cycle(kinds)
    lock = threading.Lock()

    class InvalidEngine(pb_grpc.PolicyEngineServicer):
        answered = {k: 0 for k in kinds}

        def _answer(self, req):
            with lock:
                kind = next(rotation)
                self.answered[kind] += 1
            return invalid_answer(req, kind)

        def Schedule(self, request, context):
            return self._answer(request)

        def ScheduleStream(self, request_iterator, context):
            for req in request_iterator:
                yield self._answer(req)

        def Report(self, request, context):
            return pb.ReportResponse(accepted=len(request.events))
        def Route(self, request, context):
            # the federation Router's question (docker_cluster/federation.py): a cluster that is no candidate, or a job
            # index past the one-job buffer; the Router policy must route by its built-in rule instead
            with lock:
                self.routed = getattr(self, "routed", 0) + 1
                n = self.routed
            ids = [c.cluster_id for c in request.clusters]
            if n % 2:
                return pb.RouteResponse(request_id=request.request_id, decision_id="invalid-route-cluster",
                                        job_index=0, cluster_id=max(ids, default=0) + 1000, policy="invalid-answers")
            return pb.RouteResponse(request_id=request.request_id, decision_id="invalid-route-job",
                                    job_index=len(request.jobs) + 5, cluster_id=ids[0] if ids else 0,
                                    policy="invalid-answers")

        def GetInfo(self, request, context):
            return pb.GetInfoResponse(protocol_version=PROTOCOL_VERSION, policy="invalid-answers",
                                      model_version="invalid", capabilities=["schedule", "route", REPORT_CAPABILITY],
                                      engine_version="invalid-engine")

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    servicer = InvalidEngine()
    pb_grpc.add_PolicyEngineServicer_to_server(servicer, server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for svc in ("", SERVICE_NAME):
        health_servicer.set(svc, health_pb2.HealthCheckResponse.SERVING)
    bound = server.add_insecure_port(f"{host}:{port}")
    if not bound:
        raise OSError(f"cannot listen on {host}:{port}")
    server.start()
    server.servicer = servicer
    return server, bound


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on (default %(default)s)")
    ap.add_argument("--port", type=int, default=50061, help="port (default %(default)s)")
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help=f"comma-separated answers to rotate through, of {', '.join(KINDS + (WAIT,))} "
                         "(default: the four invalid ones)")
    args = ap.parse_args(argv)
    kinds = tuple(k for k in args.kinds.split(",") if k)
    if not kinds or any(k not in KINDS + (WAIT,) for k in kinds):
        ap.error(f"--kinds: choose from {', '.join(KINDS + (WAIT,))}")
    try:
        server, bound = build_server(args.host, args.port, kinds)
    except (OSError, RuntimeError) as e:
        print(f"invalid-engine: error: {e}", file=sys.stderr)
        return 1
    print(f"invalid-engine: answering invalid schedules on {args.host}:{bound}", flush=True)
    try:
        server.wait_for_termination()
    except KeyboardInterrupt:
        server.stop(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
