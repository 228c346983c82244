"""`policy-engine serve`: the Engine behind a grpc.aio server.

asyncio rather than the thread-pool server: on our 2-core machines it carried about 22k messages/s over
bidirectional streams against ~10k for the synchronous server, which also silently starves streams beyond its
worker count. Health checking (grpc.health.v1) and reflection are on; Prometheus metrics are served on
--metrics-port when given. SIGTERM/SIGINT: health goes NOT_SERVING, in-flight calls get a grace period, exit 0.

Security (policy_engine.security): plaintext by default, TLS or mutual TLS with --tls-cert/--tls-key
[--tls-client-ca], and a bearer token on every RPC with --token-file; health and reflection are served on the same
port under the same policy. SIGHUP (or --watch) reloads the --model file in place (policy_engine.reload).
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import logging
import os
import signal
import time
import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from policy_engine import PROTOCOL_VERSION, __version__
from policy_engine.codec import (
    InvalidRequest,
    ScheduleDecoder,
    decode_events,
    decode_route,
    decode_schedule,
    encode_route_decision,
    encode_schedule,
    encode_schedule_decision,
    encode_schedule_decision_bytes,
    parse_schedule_request,
)
from policy_engine.batch import (
    MAX_BATCH_NODES,
    BatchScheduler,
    encode_batch_decision_bytes,
    parse_batch_request,
)
from policy_engine.codec import MAX_ASKS
from policy_engine.engine import Engine, EngineMetrics, clip_schedule
from policy_engine.policy import (REPORT_CAPABILITY, SCHEDULE, SCHEDULE_BATCH_CAPABILITY, ObservationMismatch,
                                  Policy)
from policy_engine.proto import SERVICE_NAME, pb, pb_grpc
from policy_engine.security import ServerSecurity, TokenAuthInterceptor
from policy_engine.types import (
    Ask,
    BlockInfo,
    ClusterSummary,
    JobMetadata,
    LocalityRequest,
    Node,
    Resource,
    ScheduleObservation,
)

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
# A Report answers once the online learner has taken its events in (so the caller's next Schedule sees what was
# learned; the emulator's remote mode relies on it), or after this long when the learner is behind.
REPORT_WAIT_S = 0.5
# ScheduleResponse.shadow = true (field 20, varint): appended to a shadow request's answer (fields in number order)
SHADOW_ANSWER = b"\xa0\x01\x01"


class _Refused(Exception):
    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code, self.message = code, message


class PolicyEngineService(pb_grpc.PolicyEngineServicer):
    def __init__(self, engine: Engine, metrics: EngineMetrics):
        self.engine = engine
        self.metrics = metrics
        self._latency = {rpc: metrics.latency.labels(rpc) for rpc in ("schedule", "route", "report",
                                                                       "schedule_batch")}
        self._decoder = ScheduleDecoder()
        self._batcher = BatchScheduler(engine)
        # Batches are decided one at a time, in arrival order (their node views share live counts); other calls
        # are answered between a batch's slices.
        self._batch_lock = asyncio.Lock()
        self._batch = BatchMetrics(metrics)

    # ------------------------------------------------------------ messages <-> engine (the codec does the rest)

    def schedule_message(self, req: pb.ScheduleRequest) -> pb.ScheduleResponse:
        engine, policy = self.engine, self.engine.policy
        obs = decode_schedule(req)
        decision, decision_id = engine.schedule_logged(obs)
        resp = encode_schedule_decision(decision, obs.request_id, decision_id, policy.name, policy.model_version)
        resp.shadow = obs.shadow
        return resp

    def schedule_bytes(self, data: bytes) -> bytes:
        """Schedule and ScheduleStream receive serialized requests and answer serialized responses (see
        `_RawScheduleRequests`): decoded by the caching ScheduleDecoder unless annotators (HDFS block locations)
        edit the observations, encoded straight to bytes."""
        engine, policy = self.engine, self.engine.policy
        if engine.annotators:
            obs, raw = decode_schedule(parse_schedule_request(data)), None
        else:
            obs, raw = self._decoder.decode(data), data
        decision, decision_id = engine.schedule_logged(obs, raw)
        data = encode_schedule_decision_bytes(decision, obs.request_id, decision_id, policy.name,
                                              policy.model_version)
        return data + SHADOW_ANSWER if obs.shadow else data

    def route_message(self, req: pb.RouteRequest) -> pb.RouteResponse:
        engine, policy = self.engine, self.engine.policy
        obs = decode_route(req)
        decision, decision_id = engine.route_logged(obs)
        return encode_route_decision(decision, obs, decision_id, policy.name, policy.model_version)

    def info_message(self) -> pb.GetInfoResponse:
        policy = self.engine.policy
        capabilities = policy.capabilities | {REPORT_CAPABILITY}
        if SCHEDULE in capabilities:
            capabilities |= {SCHEDULE_BATCH_CAPABILITY}
        return pb.GetInfoResponse(
            protocol_version=PROTOCOL_VERSION, policy=policy.name, model_version=policy.model_version,
            model_checksum=policy.model_checksum, capabilities=sorted(capabilities),
            engine_version=__version__, max_batch_nodes=MAX_BATCH_NODES, max_batch_asks=MAX_ASKS,
        )

    def _call(self, rpc: str, fn, request):
        t0 = time.perf_counter()
        try:
            resp = fn(request)
        except (InvalidRequest, ObservationMismatch) as e:
            self.metrics.errors.labels(rpc, "INVALID_ARGUMENT").inc()
            raise _Refused(grpc.StatusCode.INVALID_ARGUMENT, str(e)) from None
        except NotImplementedError as e:
            self.metrics.errors.labels(rpc, "UNIMPLEMENTED").inc()
            raise _Refused(grpc.StatusCode.UNIMPLEMENTED, str(e)) from None
        except Exception as e:  # a policy bug must not take the server down; the caller falls back
            log.exception("%s failed", rpc)
            self.metrics.errors.labels(rpc, "INTERNAL").inc()
            raise _Refused(grpc.StatusCode.INTERNAL, f"{rpc} failed in the engine: {type(e).__name__}: {e}") from None
        self._latency[rpc].observe(time.perf_counter() - t0)
        return resp

    async def _unary(self, rpc, fn, request, context):
        try:
            return self._call(rpc, fn, request)
        except _Refused as r:
            await context.abort(r.code, r.message)

    async def Schedule(self, request, context):
        return await self._unary("schedule", self.schedule_bytes, request, context)

    async def ScheduleStream(self, request_iterator, context):
        async for request in request_iterator:
            try:
                yield self._call("schedule", self.schedule_bytes, request)
            except _Refused as r:
                await context.abort(r.code, f"request {_request_id(request)!r}: {r.message}")

    async def ScheduleBatch(self, request: bytes, context):
        """Many node heartbeats, the asks once (policy_engine.batch). Decided on the event loop's thread (the
        engine's state is not shared across threads) in slices of about 2 ms, handing the loop back between
        slices: a 10,000-node batch does not hold up health checks or other calls."""
        t0 = time.perf_counter()
        metrics, batch_metrics = self.metrics, self._batch
        policy = self.engine.policy
        if SCHEDULE not in policy.capabilities:
            metrics.errors.labels("schedule_batch", "UNIMPLEMENTED").inc()
            await context.abort(grpc.StatusCode.UNIMPLEMENTED,
                                f"policy {policy.name!r} does not schedule on node heartbeats")
        try:
            batch = self._batcher.decode(parse_batch_request(request), request)
        except InvalidRequest as e:
            metrics.errors.labels("schedule_batch", "INVALID_ARGUMENT").inc()
            batch_metrics.refused("batch", 1)
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"batch refused: {e}")
        except Exception as e:  # a decoder bug: said as INTERNAL, never gRPC's UNKNOWN
            log.exception("schedule_batch: decoding failed")
            metrics.errors.labels("schedule_batch", "INTERNAL").inc()
            await context.abort(grpc.StatusCode.INTERNAL,
                                f"schedule_batch failed in the engine: {type(e).__name__}: {e}")
        async with self._batch_lock:
            steps = self._batcher.steps(batch)
            try:
                while True:
                    next(steps)
                    await asyncio.sleep(0)  # let other calls in between slices of the batch
                    if context.cancelled():  # the caller gave up (its deadline passed): it schedules natively
                        batch_metrics.refused("abandoned", 1)
                        return b""
            except StopIteration as stop:
                decision = stop.value
            except Exception as e:  # a policy bug: the caller falls back for the whole batch
                log.exception("schedule_batch failed")
                metrics.errors.labels("schedule_batch", "INTERNAL").inc()
                await context.abort(grpc.StatusCode.INTERNAL,
                                    f"schedule_batch failed in the engine: {type(e).__name__}: {e}")
        policy = self.engine.policy
        out = encode_batch_decision_bytes(decision, policy.name, policy.model_version)
        batch_metrics.observe(batch, decision)
        self._latency["schedule_batch"].observe(time.perf_counter() - t0)
        return out

    async def Route(self, request, context):
        return await self._unary("route", self.route_message, request, context)

    async def RouteStream(self, request_iterator, context):
        async for request in request_iterator:
            try:
                yield self._call("route", self.route_message, request)
            except _Refused as r:
                await context.abort(r.code, f"request {request.request_id!r}: {r.message}")

    async def Report(self, request, context):
        t0 = time.perf_counter()
        try:
            events = decode_events(request.events)
        except InvalidRequest as e:
            self.metrics.errors.labels("report", "INVALID_ARGUMENT").inc()
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        loop = asyncio.get_running_loop()
        learned = loop.create_future()

        def done() -> None:  # from the learner's thread, or at once when there is no learner
            loop.call_soon_threadsafe(_resolve, learned)

        try:
            accepted = self.engine.report(events, done)
        except Exception as e:
            log.exception("report failed")
            self.metrics.errors.labels("report", "INTERNAL").inc()
            await context.abort(grpc.StatusCode.INTERNAL, f"report failed in the engine: {type(e).__name__}: {e}")
        try:
            await asyncio.wait_for(learned, REPORT_WAIT_S)
        except asyncio.TimeoutError:
            pass  # the learner is behind: the events are queued, the caller need not wait for them
        self._latency["report"].observe(time.perf_counter() - t0)
        return pb.ReportResponse(accepted=accepted)

    async def GetInfo(self, request, context):
        # counters an operator asks for with `policy-engine info`, as trailing metadata (the message is shared)
        context.set_trailing_metadata((("yarnrl-asks-total", str(self.engine.asks_seen)),
                                       ("yarnrl-asks-with-blocks", str(self.engine.asks_with_blocks))))
        return self.info_message()


class BatchMetrics:
    """Prometheus metrics of the batched path, in the engine's registry."""

    def __init__(self, metrics: EngineMetrics):
        from prometheus_client import Counter, Histogram

        registry = metrics.registry
        self.nodes = Histogram("yarnrl_batch_nodes", "Nodes per ScheduleBatch call",
                               buckets=(1, 4, 16, 64, 128, 256, 512, 1024, 4096, 10_000), registry=registry)
        self.outcomes = Counter("yarnrl_batch_node_answers", "Nodes of ScheduleBatch calls by outcome: decided (a "
                                "policy call), idle (nothing fits: answered without one), refused (malformed node)",
                                ["outcome"], registry=registry)
        self.refusals = Counter("yarnrl_batch_refused", "Refusals on the batched path: a whole batch (past a "
                                "limit, unparsable), a node, an ask; and batches abandoned half-decided because "
                                "the caller cancelled (its deadline passed)", ["what"], registry=registry)
        self._outcome = {k: self.outcomes.labels(k) for k in ("decided", "idle", "refused")}
        self._refused = {k: self.refusals.labels(k) for k in ("batch", "node", "ask", "abandoned")}

    def refused(self, what: str, n: int) -> None:
        if n:
            self._refused[what].inc(n)

    def observe(self, batch, decision) -> None:
        n = len(batch.nodes)
        self.nodes.observe(n)
        refused = len(batch.node_errors)
        self._outcome["refused"].inc(refused)
        self._outcome["idle"].inc(decision.idle_nodes)
        self._outcome["decided"].inc(n - refused - decision.idle_nodes)
        self.refused("node", refused)
        self.refused("ask", len(batch.ask_errors))


class _Malformed:
    """What a request that did not parse as its message is handed to the handler as (StrictDecoding)."""

    __slots__ = ("error",)

    def __init__(self, error: str):
        self.error = error


def _tolerant(deserializer):
    def parse(data: bytes):
        try:
            return deserializer(data)
        except Exception as e:  # DecodeError and whatever else a message parser raises on bytes it does not expect
            return _Malformed(f"{type(e).__name__}: {one_line_error(e)}")
    return parse


def one_line_error(e: BaseException) -> str:
    return " ".join(str(e).split())[:300]


class StrictDecoding(grpc.aio.ServerInterceptor):
    """A request that does not parse as its message is answered INVALID_ARGUMENT, on every service of the server
    (ours, health, reflection). gRPC's own answer would be UNKNOWN ("Unexpected DecodeError"), which a caller
    cannot tell from a bug in the engine; the fuzzer (benchmarks/fuzz.py) found it."""

    def __init__(self, metrics: EngineMetrics | None = None):
        self.metrics = metrics

    async def intercept_service(self, continuation, details):
        handler = await continuation(details)
        if handler is None or handler.request_deserializer is None:
            return handler  # not ours to change (unknown method: UNIMPLEMENTED), or raw bytes (Schedule)
        method = details.method
        metrics = self.metrics

        async def refuse(context, request: _Malformed):
            if metrics is not None:
                metrics.errors.labels(method.rsplit("/", 1)[-1].lower(), "INVALID_ARGUMENT").inc()
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{method}: malformed request ({request.error})")

        def checked(request_iterator, context):
            async def gen():
                async for r in request_iterator:
                    if isinstance(r, _Malformed):
                        await refuse(context, r)
                    yield r
            return gen()

        kind, behaviour = _handler_kind(handler)
        if kind in ("unary_unary", "unary_stream"):
            if inspect.isasyncgenfunction(behaviour):
                async def wrapped(request, context):
                    if isinstance(request, _Malformed):
                        await refuse(context, request)
                    async for r in behaviour(request, context):
                        yield r
            else:
                async def wrapped(request, context):
                    if isinstance(request, _Malformed):
                        await refuse(context, request)
                    return await behaviour(request, context)
        elif inspect.isasyncgenfunction(behaviour):
            async def wrapped(request_iterator, context):
                async for r in behaviour(checked(request_iterator, context), context):
                    yield r
        else:
            async def wrapped(request_iterator, context):
                return await behaviour(checked(request_iterator, context), context)
        return handler._replace(request_deserializer=_tolerant(handler.request_deserializer), **{kind: wrapped})


def _handler_kind(handler) -> tuple[str, object]:
    kind = {(False, False): "unary_unary", (False, True): "unary_stream", (True, False): "stream_unary",
            (True, True): "stream_stream"}[(bool(handler.request_streaming), bool(handler.response_streaming))]
    return kind, getattr(handler, kind)


def _request_id(data: bytes) -> str:
    try:
        return parse_schedule_request(data).request_id
    except InvalidRequest:
        return "?"


class _RawScheduleRequests:
    """Registers the generated service with Schedule and ScheduleStream receiving the serialized request (no
    request deserializer), so the server's ScheduleDecoder reads it, and answering serialized responses (no
    response serializer); every other method is as generated."""

    RAW = ("Schedule", "ScheduleStream", "ScheduleBatch")

    def __init__(self, server):
        self.server = server

    def add_generic_rpc_handlers(self, handlers) -> None:
        pass  # registered below, with the raw handlers

    def add_registered_method_handlers(self, service: str, handlers: dict) -> None:
        for name in self.RAW:
            handlers[name] = handlers[name]._replace(request_deserializer=None, response_serializer=None)
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))
        self.server.add_registered_method_handlers(service, handlers)


def warm_up_observation() -> ScheduleObservation:
    """A heartbeat of a 4-node, 2-rack cluster with one map ask over two blocks (one cached) and one ANY ask: what
    a policy sees on a real cluster, for `warm_up`."""
    total = Resource(4096, 4)
    blocks = (BlockInfo("warm-up@0", 1 << 20, ("h1", "h3"), ("h1",), ("/r1", "/r2")),
              BlockInfo("warm-up@1", 1 << 20, ("h2", "h4"), (), ("/r1", "/r2")))
    job = JobMetadata(input_blocks=blocks, input_paths=("/warm-up",))
    asks = [Ask("warm-up/20/0", "application_0_0001", priority=20, resource=Resource(512, 1), num_containers=2,
                locality=(LocalityRequest("h1", 1), LocalityRequest("h3", 1), LocalityRequest("/r1", 2),
                          LocalityRequest("/r2", 2), LocalityRequest("*", 2)), submit_time_ms=1, job=job),
            Ask("warm-up/10/0", "application_0_0001", priority=10, resource=Resource(512, 1), num_containers=1,
                submit_time_ms=1, job=JobMetadata(input_paths=("/warm-up",)))]
    return ScheduleObservation(node=Node("h1:1", "h1", "/r1", total, Resource(2048, 2), timestamp_ms=1),
                               asks=asks, request_id="warm-up",
                               cluster=ClusterSummary(4, 2, Resource(16384, 16), Resource(8192, 8)))


GC_THRESHOLD = (20_000, 10, 10)  # gc.set_threshold for `policy-engine serve` (tune_gc)


def warm_up(policy: Policy, rounds: int = 3) -> float:
    """Run the decision path once before serving: message codec, the policy's decision, the safety clip. A fresh
    engine's first decision otherwise pays lazy imports and first-call set-up (tens of milliseconds on a loaded
    machine), and on a real ResourceManager the first heartbeats of a job are the ones that place its maps: a
    cold first call missed the plugin's deadline and the job was placed natively. Only the policy's pure
    decision runs, on a made-up observation: no engine state (learner, opportunity counts, metrics) is touched.
    Returns the seconds it took; a policy that cannot decide on this observation is left cold, never fails."""
    if SCHEDULE not in policy.capabilities:
        return 0.0
    t0 = time.perf_counter()
    try:
        for _ in range(rounds):
            obs = decode_schedule(parse_schedule_request(encode_schedule(warm_up_observation()).SerializeToString()))
            decision, _ = clip_schedule(obs, policy.schedule(obs))
            encode_schedule_decision(decision, obs.request_id, "warm-up", policy.name, policy.model_version)
    except Exception as e:  # a policy that needs more than this observation gives: warmed by its first call
        log.debug("warm-up of policy %s skipped: %s", policy.name, e)
    return time.perf_counter() - t0


def _resolve(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


async def serve(policy: Policy, host: str = "127.0.0.1", port: int = 50051, metrics_port: int | None = None,
                grace_s: float = 5.0, ready: asyncio.Event | None = None, engine: Engine | None = None,
                webhdfs: str | None = None, webhdfs_ttl_s: float = 60.0, label_locality: bool = True,
                reuse_port: bool = False, decision_log: str | None = None,
                log_rotate_mb: float | None = None, security: ServerSecurity | None = None,
                model_path: str | None = None, rebuild=None, watch_s: float | None = None,
                forward_sighup: tuple[int, ...] = (), deeprm=None, ui_port: int | None = None,
                ui_host: str = "127.0.0.1", ui_tls: tuple[str, str] | None = None,
                rm_address: str | None = None, tune_gc: bool = False) -> None:
    """Run until SIGTERM/SIGINT (or until the task is cancelled).

    `webhdfs`: NameNode HTTP address; asks naming input paths without blocks get their HDFS block locations, and
    (`label_locality`) map containers' Report events get their read level from those blocks (policy_engine.labels).
    `reuse_port`: listen with SO_REUSEPORT, so several worker processes of a stateless policy share the port
    (`policy-engine serve --workers N`; the kernel spreads connections over them).
    `decision_log`: directory of the Parquet decision log (policy_engine.decision_log), closed on shutdown.
    `security`: TLS / mTLS credentials and the bearer token every RPC must carry (None: plaintext, no token).
    `model_path` + `rebuild(path) -> Policy`: SIGHUP reloads the model (and every `watch_s` seconds when the file
    changed); `forward_sighup`: pids (the other --workers) that get the SIGHUP too.
    `deeprm`: algorithms.deeprm.view.DeepRMViewConfig for DeepRM's policies (time step, node or pooled image).
    `tune_gc`: once warmed up, collect the youngest generation every GC_THRESHOLD[0] allocations instead of
    Python's 700 (the `policy-engine serve` process; not for an engine embedded in another process).
    `ui_port`: serve the live console (policy_engine.console) on `ui_host`, on its own thread, with the engine's
    token and `ui_tls` (cert, key files); `rm_address`: the RM's web address the console reads the plugin's JMX from.
    """
    security = security or ServerSecurity()
    metrics = EngineMetrics()
    if engine is None:
        engine = Engine(policy, metrics, learning="thread", deeprm=deeprm)  # the learner runs in its own thread
        engine.attach_learner()
    engine.metrics = metrics
    engine.bind_metrics()
    if decision_log:
        engine.attach_decision_log(decision_log, log_rotate_mb, threaded=True)
    locator = None
    if webhdfs:
        from policy_engine.hdfs import BlockLocator

        locator = BlockLocator(webhdfs, ttl_s=webhdfs_ttl_s, registry=metrics.registry)
        engine.annotators.append(locator.annotate)
        if label_locality:
            from policy_engine.labels import LocalityLabeler

            labeler = LocalityLabeler(registry=metrics.registry, blocks_of=locator.blocks_of)
            engine.annotators.append(labeler.annotate)
            engine.event_annotators.append(labeler.label)
    interceptors: list = []
    if security.token:  # first: an unauthenticated caller's bytes are never parsed
        interceptors.append(TokenAuthInterceptor(security.token, metrics.unauthenticated))
    interceptors.append(StrictDecoding(metrics))
    server = grpc.aio.server(interceptors=interceptors, options=[
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.so_reuseport", 1 if reuse_port else 0),
    ])
    pb_grpc.add_PolicyEngineServicer_to_server(PolicyEngineService(engine, metrics), _RawScheduleRequests(server))
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME), server)
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        credentials = security.credentials()
        bound = (server.add_secure_port(address, credentials) if credentials is not None
                 else server.add_insecure_port(address))
    except RuntimeError:  # grpcio >= 1.60 raises where older versions returned 0
        bound = 0
    if bound == 0:
        raise OSError(f"cannot listen on {address} (port in use?)")
    if metrics_port is not None:
        from prometheus_client import start_http_server

        start_http_server(metrics_port, addr=host if ":" not in host else "::", registry=metrics.registry)
    console_server = None
    if ui_port is not None:
        from policy_engine.console import Console, ConsoleServer

        console = Console(engine, metrics, rm_address=rm_address, security_desc=security.describe())
        console_server = ConsoleServer(console, ui_host, ui_port, token=security.token,
                                       certfile=ui_tls[0] if ui_tls else None, keyfile=ui_tls[1] if ui_tls else None)
    warmed = warm_up(policy)
    log.info("decision path warmed up in %.1f ms", warmed * 1000)
    if tune_gc:
        # Python's default (700 allocations per young collection) made full collections of the engine's heap
        # (caches of decoded asks and node views, a learner's state) every few seconds at 10,000 nodes, 40-65 ms
        # each with the event loop stopped, and ~4 % of its CPU (benchmarks/README.md, issue 24's vectorising).
        # (No gc.freeze(): a model replaced by a reload would then never be collected if it holds cycles.)
        gc.set_threshold(*GC_THRESHOLD)
    await server.start()
    if engine.learner is not None and hasattr(engine.learner, "describe"):
        print(f"policy-engine: {engine.learner.describe()}", flush=True)
    for svc in ("", SERVICE_NAME):
        await health_servicer.set(svc, health_pb2.HealthCheckResponse.SERVING)
    log.info("policy %s serving yarnrl.v1 on %s:%d%s", policy.name, host, bound,
             f", metrics on :{metrics_port}" if metrics_port is not None else "")
    if security.token and not security.tls and host not in ("127.0.0.1", "::1", "localhost"):
        log.warning("--token-file without TLS on %s: the token crosses the network in clear text", host)
    print(f"policy-engine: policy={policy.name} model={policy.model_version or '-'} listening on {host}:{bound}"
          + (f" metrics=http://{host}:{metrics_port}/metrics" if metrics_port is not None else "")
          + f" security={security.describe()}", flush=True)
    if console_server is not None:
        console_server.start()
        print(f"policy-engine: console={console_server.url}", flush=True)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # not the main thread (tests): cancellation stops us
            pass
    tasks: list[asyncio.Task] = []
    reloader = None
    if model_path is not None and rebuild is not None:
        from policy_engine.reload import ModelReloader

        reloader = ModelReloader(engine, model_path, rebuild, metrics)
        if console_server is not None:
            reloader.on_result = console_server.console.record_reload
        if watch_s:
            tasks.append(asyncio.ensure_future(reloader.watch(watch_s)))

    def on_sighup() -> None:
        for pid in forward_sighup:
            try:
                os.kill(pid, signal.SIGHUP)
            except OSError:
                pass
        if reloader is None:
            print("policy-engine: SIGHUP ignored: no --model to reload", flush=True)
            return
        tasks[:] = [t for t in tasks if not t.done()]
        tasks.append(asyncio.ensure_future(reloader.reload("SIGHUP")))

    try:
        loop.add_signal_handler(signal.SIGHUP, on_sighup)
    except (NotImplementedError, RuntimeError, AttributeError):  # not the main thread (tests), or no SIGHUP
        pass
    if ready is not None:
        ready.port = bound  # type: ignore[attr-defined]
        ready.reloader = reloader  # type: ignore[attr-defined]
        ready.console = console_server  # type: ignore[attr-defined]
        ready.set()
    try:
        await stop.wait()
        print("policy-engine: shutting down", flush=True)
    finally:
        for task in tasks:
            task.cancel()
        await health_servicer.enter_graceful_shutdown()
        await server.stop(grace_s)
        if console_server is not None:
            await asyncio.to_thread(console_server.close)
        if locator is not None:
            locator.close()
        await asyncio.to_thread(engine.close)  # the learner's final save: file I/O, off the event loop
