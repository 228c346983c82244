"""`policy-engine`: serve a scheduling policy over gRPC, list policies, query a running engine, run the demo."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import subprocess
import sys

# gRPC core's own log lines (a failed TLS handshake is logged at INFO by some builds) would come before our one line
# on stderr; ERROR keeps its real failures. Set before grpc is first imported; an explicit setting wins.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

from policy_engine import PROTOCOL_VERSION, __version__
from policy_engine.command import (DEBUG_ENV, CommandFailed, OneLineParser, UsageError, add_debug_flag,
                                   existing_file, one_line, positive, run_main)


def parse_options(pairs: list[str], flag: str = "--set") -> dict:
    """`--set key=value` pairs; values are read as JSON when they parse (numbers, booleans), else as strings."""
    out = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} takes KEY=VALUE, got {pair!r}")
        try:
            out[key.replace("-", "_")] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.replace("-", "_")] = raw
    return out


def translate_error(e: BaseException) -> BaseException | None:
    """Library exceptions that are the user's to fix, as UsageError (exit 2) or CommandFailed (exit 1)."""
    import grpc

    from policy_engine.artifact import ArtifactError
    from policy_engine.client import EngineUnavailable
    from policy_engine.extras import MissingExtra
    from policy_engine.policy import IncompatiblePolicy, OptionError, UnknownPolicy

    if isinstance(e, (UnknownPolicy, IncompatiblePolicy, OptionError)):
        return UsageError(str(e))
    if isinstance(e, (ArtifactError, EngineUnavailable, EngineStartFailed, MissingExtra)):
        return CommandFailed(str(e))
    if isinstance(e, grpc.RpcError) and hasattr(e, "code"):
        return CommandFailed(f"the policy engine answered {e.code().name}: {e.details()}")
    return None


def build_policy(name: str, model: str | None, options: dict):
    """The policy `serve` would run; bad names and options are usage errors, unusable model files runtime ones."""
    from policy_engine.artifact import ArtifactError
    from policy_engine.policy import create

    try:
        return create(name, model=model, **options)
    except ArtifactError as e:
        raise CommandFailed(f"cannot load policy {name!r}: {e}") from None
    except OSError as e:
        raise CommandFailed(f"cannot build policy {name!r}: {e}") from None


def check_port(flag: str, port: int | None, allow_zero: bool = True) -> None:
    if port is not None and not (0 if allow_zero else 1) <= port <= 65535:
        raise UsageError(f"{flag} {port} is not a TCP port ({'0' if allow_zero else '1'}-65535)")


def check_target(target: str) -> None:
    """HOST:PORT (the form `policy-engine serve` prints); catches typos before a gRPC wait."""
    host, sep, port = target.rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise UsageError(f"target {target!r} is not HOST:PORT (e.g. 127.0.0.1:50051)")


def check_can_listen(host: str, port: int) -> None:
    """Bind a plain socket where gRPC will: a port in use or an address not ours is one clear line here, before
    gRPC's own error log. (Races with another process are still caught when gRPC binds.)"""
    import errno
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise UsageError(f"--host {host!r} does not resolve ({e.strerror})") from None
    for family, kind, proto, _, addr in infos:
        with socket.socket(family, kind, proto) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC does
            try:
                s.bind(addr)
            except OSError as e:
                hint = "; --port 0 picks a free one" if e.errno == errno.EADDRINUSE else ""
                raise CommandFailed(f"cannot serve: cannot listen on {host}:{port} ({e.strerror}{hint})") from None


def check_log_dir(flag: str, path: str | None, rotate_mb: float | None = None) -> None:
    """A decision-log directory we can create and write, checked before anything starts."""
    if rotate_mb is not None:
        if path is None:
            raise UsageError("--log-rotate-mb needs --decision-log DIR")
        positive("--log-rotate-mb", rotate_mb)
    if path is None:
        return
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{flag} {path} is a file; it names the directory the Parquet log is written to")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise CommandFailed(f"cannot create {flag} {path}: {e.strerror or e}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise CommandFailed(f"cannot write to {flag} {path}: permission denied")


def cmd_serve(args) -> int:
    _die_with_parent()
    from policy_engine.server import serve

    existing_file(args.model)
    check_port("--port", args.port)
    check_port("--metrics-port", args.metrics_port)
    if args.metrics_port is not None and args.metrics_port != 0 and args.metrics_port == args.port:
        raise UsageError(f"--metrics-port {args.metrics_port} is the gRPC --port too; give it another one")
    positive("--grace", args.grace, allow_zero=True)
    if args.webhdfs is not None and not args.webhdfs.startswith(("http://", "https://")):
        raise UsageError(f"--webhdfs takes http(s)://HOST:PORT, got {args.webhdfs!r}")
    positive("--webhdfs-ttl", args.webhdfs_ttl)
    check_log_dir("--decision-log", args.decision_log, args.log_rotate_mb)
    if args.decision_log is not None:
        import policy_engine.decision_log  # noqa: F401  (a missing pyarrow is one line naming the extra, here)
    if args.webhdfs is not None:
        import policy_engine.hdfs  # noqa: F401  (fails here, with the extra to install, before anything starts)
    security = server_security(args)
    if args.watch and args.model is None:
        raise UsageError("--watch reloads the --model file; give --model PATH")
    positive("--watch-interval", args.watch_interval)
    options = parse_options(args.set)
    policy = build_policy(args.policy, args.model, options)
    from algorithms.deeprm.view import DeepRMViewConfig

    try:
        deeprm = DeepRMViewConfig(step_ms=args.deeprm_step_ms, image=args.deeprm_image,
                                  default_runtime_ms=args.deeprm_default_runtime_ms)
    except ValueError as e:
        raise UsageError(f"--deeprm-*: {e}") from None
    if args.workers < 1:
        raise UsageError(f"--workers must be >= 1, not {args.workers}")
    workers: list[subprocess.Popen] = []
    if args.workers > 1:
        from policy_engine.policy import per_engine_state

        state = per_engine_state(policy)
        if state:
            raise UsageError(f"--workers {args.workers}: policy {policy.name!r} keeps state per engine ("
                             f"{'; '.join(state)}) that would split across processes; serve it with one worker")
        if args.port == 0:
            args.port = _free_port(args.host)
    check_console(args, security)
    if not args.reuse_port:  # a worker's port is already taken by its siblings, on purpose
        check_can_listen(args.host, args.port)
        if args.metrics_port:
            check_can_listen(args.host, args.metrics_port)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for i in range(1, args.workers):
        workers.append(_start_worker(args, i))
    try:
        asyncio.run(serve(policy, host=args.host, port=args.port, metrics_port=args.metrics_port,
                          grace_s=args.grace, webhdfs=args.webhdfs, webhdfs_ttl_s=args.webhdfs_ttl,
                          label_locality=args.label_locality, decision_log=args.decision_log,
                          log_rotate_mb=args.log_rotate_mb, reuse_port=args.workers > 1 or args.reuse_port,
                          security=security, model_path=args.model, tune_gc=True,
                          rebuild=lambda path: build_policy(args.policy, path, options),
                          watch_s=args.watch_interval if args.watch else None,
                          forward_sighup=tuple(w.pid for w in workers), deeprm=deeprm,
                          ui_port=args.ui_port, ui_host=args.ui_host, rm_address=args.rm_address,
                          ui_tls=(args.tls_cert, args.tls_key) if args.tls_cert else None))
    except OSError as e:
        raise CommandFailed(f"cannot serve: {e}") from None
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            try:
                w.wait(timeout=args.grace + 30)
            except subprocess.TimeoutExpired:
                w.kill()
    return 0


def check_console(args, security) -> None:
    """--ui-port / --ui-host / --rm-address: a bad combination, an exposed console or a taken port is one line
    here (exit 2), before anything starts."""
    if args.ui_port is None:
        if args.rm_address is not None:
            raise UsageError("--rm-address is read by the console: give --ui-port N too")
        return
    check_port("--ui-port", args.ui_port)
    if args.workers > 1:
        raise UsageError("--ui-port shows one engine process; serve the console with --workers 1")
    if args.ui_port != 0 and args.ui_port in (args.port, args.metrics_port):
        raise UsageError(f"--ui-port {args.ui_port} is taken by --port or --metrics-port; give it another one")
    if args.rm_address is not None:
        host, sep, port = args.rm_address.split("://", 1)[-1].rstrip("/").rpartition(":")
        if not sep or not host or not port.isdigit():
            raise UsageError(f"--rm-address takes the RM's web address HOST:PORT (e.g. rm:8088), got "
                             f"{args.rm_address!r}")
    from policy_engine.console import check_ui_exposure

    why = check_ui_exposure(args.ui_host, security.tls, bool(security.token))
    if why:
        raise UsageError(why)
    if args.ui_port:
        try:
            check_can_listen(args.ui_host, args.ui_port)
        except CommandFailed as e:
            raise UsageError(str(e).replace("cannot serve:", "cannot serve the console:")
                             .replace("--port 0", "--ui-port 0")) from None


def _free_port(host: str) -> int:
    import socket

    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _start_worker(args, i: int) -> subprocess.Popen:
    """Worker i of `serve --workers N`: the same policy on the same port (SO_REUSEPORT), metrics on port + i."""
    cmd = [sys.executable, "-m", "policy_engine.cli", "serve", "--policy", args.policy, "--host", args.host,
           "--port", str(args.port), "--grace", str(args.grace), "--reuse-port"]
    if args.model:
        cmd += ["--model", args.model]
    for pair in args.set or []:
        cmd += ["--set", pair]
    if args.metrics_port:
        cmd += ["--metrics-port", str(args.metrics_port + i)]
    if args.webhdfs:
        cmd += ["--webhdfs", args.webhdfs, "--webhdfs-ttl", str(args.webhdfs_ttl)]
    if args.decision_log:  # each worker writes its own files (their names hold its pid) in the same directory
        cmd += ["--decision-log", args.decision_log]
        if args.log_rotate_mb:
            cmd += ["--log-rotate-mb", str(args.log_rotate_mb)]
    for flag in ("tls_cert", "tls_key", "tls_client_ca", "token_file"):
        if getattr(args, flag):
            cmd += ["--" + flag.replace("_", "-"), getattr(args, flag)]
    if args.watch:
        cmd += ["--watch", "--watch-interval", str(args.watch_interval)]
    if args.verbose:
        cmd.append("--verbose")
    return subprocess.Popen(cmd, env=_child_env())


def server_security(args):
    """--tls-* and --token-file, checked now (files exist, PEM parses, key matches, not expired, token not empty)."""
    from policy_engine.security import SecurityConfigError, ServerSecurity

    for flag in ("tls_cert", "tls_key", "tls_client_ca", "token_file"):
        existing_file(getattr(args, flag), "--" + flag.replace("_", "-"))
    try:
        return ServerSecurity.from_files(args.tls_cert, args.tls_key, args.tls_client_ca, args.token_file)
    except SecurityConfigError as e:
        raise UsageError(str(e)) from None


def client_security(args):
    """The `info` command's --tls-ca / --tls-cert / --tls-key / --token-file / --tls-server-name."""
    from policy_engine.security import ClientSecurity, SecurityConfigError

    for flag in ("tls_ca", "tls_cert", "tls_key", "token_file"):
        existing_file(getattr(args, flag), "--" + flag.replace("_", "-"))
    try:
        sec = ClientSecurity(ca=args.tls_ca, cert=args.tls_cert, key=args.tls_key, token_file=args.token_file,
                             server_name=args.tls_server_name)
        sec.bearer()
        if sec.tls:
            sec.channel_credentials()
        return sec
    except SecurityConfigError as e:
        raise UsageError(str(e)) from None


def cmd_policies(args) -> int:
    from policy_engine.policy import available

    specs = available()
    if args.json:
        print(json.dumps({"policies": [
            {"name": s.name, "summary": s.summary, "capabilities": sorted(s.capabilities), "model": s.model,
             "families": sorted(s.families)}
            for s in specs]}))
        return 0
    width = max(len(s.name) for s in specs)
    for s in specs:
        caps = ",".join(sorted(s.capabilities))
        model = {"required": " [needs --model]", "optional": " [--model optional]"}.get(s.model, "")
        print(f"{s.name:<{width}}  {caps:<9}  {s.summary}{model}")
    return 0


def cmd_info(args) -> int:
    import grpc

    from policy_engine.client import PolicyEngineClient

    check_target(args.target)
    positive("--timeout", args.timeout)
    security = client_security(args)
    with PolicyEngineClient(args.target, timeout=args.timeout, security=security) as client:
        try:
            info, counters = client.info_counters()
            status = client.health()
        except grpc.RpcError as e:
            from policy_engine.security import explain_failure

            hint = explain_failure(e.details() or "", security)
            if e.code() == grpc.StatusCode.UNAUTHENTICATED:
                hint = "give the engine's token with --token-file"
            raise CommandFailed(f"{args.target}: {e.code().name}: {one_line(e.details())} ("
                                + (hint or f"is `policy-engine serve` listening there? --timeout {args.timeout:g}s")
                                + ")") from None
    d = {"target": args.target, "health": status, "protocol_version": info.protocol_version, "policy": info.policy,
         "model_version": info.model_version, "model_checksum": info.model_checksum,
         "capabilities": list(info.capabilities), "engine_version": info.engine_version,
         # asks the policy has seen, and those that carried HDFS block locations (--webhdfs or the caller's own)
         "asks_total": counters.get("asks_total", 0), "asks_with_blocks": counters.get("asks_with_blocks", 0)}
    if not args.json:
        for k, v in d.items():
            print(f"{k:>16}: {v}")
    print(json.dumps(d) if args.json else "", end="\n" if args.json else "")
    return 0


# A child engine dies with the process that started it (PR_SET_PDEATHSIG), so a crashed test or demo leaves no
# engine behind. The child sets this itself, from the parent's pid in the environment, instead of a Popen
# preexec_fn: a preexec_fn forces fork() instead of vfork(), which runs gRPC's fork handlers in the child, and those
# can abort it before exec (epoll_wait EBADF after close_fds, grpc/grpc#43055) when the parent has gRPC loaded.
_PARENT_PID_ENV = "YARNRL_DIE_WITH_PARENT"


def _child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a child engine that should exit when this process does."""
    return {**(env if env is not None else os.environ), _PARENT_PID_ENV: str(os.getpid())}


def _die_with_parent() -> None:
    """In a child started with `_child_env`: get SIGTERM when the parent exits (at once if it already has)."""
    parent = os.environ.pop(_PARENT_PID_ENV, "")
    if not parent.isdigit():
        return
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the caller's cleanup is all there is
        return
    if os.getppid() != int(parent):  # the parent exited before the death signal was armed
        os.kill(os.getpid(), signal.SIGTERM)


class EngineStartFailed(RuntimeError):
    """A `policy-engine serve` child exited before listening; the message ends with its own last line."""


def start_engine_subprocess(policy: str, extra: list[str] | None = None, timeout: float = 60.0,
                            profile: str | os.PathLike | None = None):
    """Start `policy-engine serve --port 0` as a child process; return (process, "127.0.0.1:PORT").
    `profile`: run it under cProfile (the event loop's thread), the stats written to that file when it exits."""
    prefix = ["-m", "cProfile", "-o", os.fspath(profile)] if profile is not None else []
    cmd = [sys.executable, *prefix, "-m", "policy_engine.cli", "serve", "--policy", policy, "--port", "0",
           *(extra or [])]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=_child_env({**os.environ, "PYTHONUNBUFFERED": "1"}))
    lines = []
    for line in proc.stdout:  # the server prints one line with its bound port once listening
        lines.append(line)
        if "listening on" in line:
            target = line.split("listening on", 1)[1].split()[0]
            return proc, target
    proc.wait(timeout=timeout)
    last = next((ln.strip() for ln in reversed(lines) if ln.strip()), "no output")
    raise EngineStartFailed(f"`policy-engine serve --policy {policy}` exited ({proc.returncode}) before "
                            f"listening: {last}")


def cmd_demo(args) -> int:
    from policy_engine.client import PolicyEngineClient
    from policy_engine.demo import run_script
    from policy_engine.policy import SCHEDULE, check_runs_on, spec

    policies = [p for p in args.policies.split(",") if p.strip()]
    if not policies:
        raise UsageError(f"--policies names no policy, got {args.policies!r}")
    for policy in policies:  # the script is node heartbeats on a locality cluster, with no model files
        check_runs_on(policy, SCHEDULE, "locality", "the demo's scripted node heartbeats")
        if spec(policy).model == "required":
            raise UsageError(f"policy {policy!r} needs a model file, which the demo does not take; try "
                             f"`emulator run --policy {policy} --model PATH`")
    results = {}
    for policy in policies:
        proc, target = start_engine_subprocess(policy)
        try:
            with PolicyEngineClient(target, timeout=2.0) as client:
                client.wait_ready(30)
                rows = run_script(client)
                info = client.info()
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        results[policy] = rows
        if not args.json:
            print(f"\n== policy {info.policy} (engine {info.engine_version}, {info.protocol_version}) at {target}")
            print(f"{'beat':>4}  {'node':<6} {'rack':<7} {'ask':<10} {'n':>2}  locality")
            for r in rows:
                print(f"{r['heartbeat']:>4}  {r['node']:<6} {r['rack']:<7} {r['ask']:<10} {r['count']:>2}  "
                      f"{r['locality']}")
    summary = {}
    for policy, rows in results.items():
        placed = [r for r in rows if r["count"] > 0]
        total = sum(r["count"] for r in placed)
        local = sum(r["count"] for r in placed if r["locality"] in ("node_local", "cache_local"))
        summary[policy] = {"containers": total, "node_local": local,
                           "app1_node_local": sum(r["count"] for r in placed if r["ask"] == "app1-maps"
                                                  and r["locality"] == "node_local")}
    if not args.json:
        print("\nsummary: " + "; ".join(f"{p}: {s['node_local']}/{s['containers']} containers node-local"
                                        for p, s in summary.items()))
    print(json.dumps({"demo": "scripted-heartbeats", "policies": summary}))
    return 0


def add_client_security_flags(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("security", "for an engine served with --tls-cert / --tls-client-ca / --token-file")
    g.add_argument("--tls-ca", metavar="PEM", help="CA bundle that signed the engine's certificate: connect with TLS")
    g.add_argument("--tls-cert", metavar="PEM", help="client certificate for mutual TLS")
    g.add_argument("--tls-key", metavar="PEM", help="private key of --tls-cert")
    g.add_argument("--tls-server-name", metavar="NAME",
                   help="name to check the engine's certificate against (default: the target's host)")
    g.add_argument("--token-file", metavar="FILE", help="file holding the engine's bearer token")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="policy-engine",
        description="yarn-rl policy engine: answers the YARN plugin's (and the emulator's) scheduling requests "
                    f"over gRPC, protocol {PROTOCOL_VERSION}.",
        epilog="Mistakes end in one line on stderr and exit 2 (the command line is wrong) or 1 (it failed while "
               f"running); --debug or {DEBUG_ENV}=1 shows the traceback of an internal error.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__} ({PROTOCOL_VERSION})")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("serve", help="serve a policy over gRPC",
                       description="Serve one policy over gRPC (yarnrl.v1) with health checking, reflection and "
                                   "optional Prometheus metrics. Stops gracefully on SIGTERM or Ctrl-C.")
    s.add_argument("--policy", required=True, help="registered policy name (see `policy-engine policies`)")
    s.add_argument("--model", help="model artifact for learned policies")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    s.add_argument("--port", type=int, default=50051, help="gRPC port; 0 picks a free one (default 50051)")
    s.add_argument("--metrics-port", type=int, help="serve Prometheus metrics on this port at /metrics")
    s.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="policy option, repeatable (e.g. --set node_locality_delay=10)")
    s.add_argument("--grace", type=float, default=5.0, help="seconds in-flight calls get on shutdown (default 5)")
    s.add_argument("--webhdfs", metavar="URL",
                   help="NameNode HTTP address (http://HOST:PORT): attach HDFS block and cached-replica locations of "
                        "the asks' input paths (application tag yarnrl.input=PATH) read with WebHDFS")
    s.add_argument("--webhdfs-ttl", type=float, default=60.0, metavar="SECONDS",
                   help="age after which block locations of one path are refreshed in the background; the old answer "
                        "is served meanwhile (default 60)")
    s.add_argument("--no-label-locality", dest="label_locality", action="store_false",
                   help="with --webhdfs: keep the plugin's locality on ContainerStarted/Finished instead of the "
                        "engine's read level from the job's blocks (CACHE_LOCAL, rack_cached; policy_engine/labels.py)")
    s.add_argument("--decision-log", metavar="DIR",
                   help="write every decision and Report event to Parquet files in DIR, off the decision path "
                        "(a full queue drops and counts in yarnrl_decision_log_dropped_total; see docs/decision-log.md)")
    s.add_argument("--log-rotate-mb", type=float, metavar="MB",
                   help="start a new decision-log file once one holds this many MB (default 64)")
    s.add_argument("--workers", type=int, default=1, metavar="N",
                   help="serve from N processes sharing the port (SO_REUSEPORT; the kernel spreads connections, not "
                        "calls, so it helps callers with several connections). Only for policies that keep no "
                        "state per engine: opportunity counts and online learners would split. Worker i serves "
                        "metrics on --metrics-port + i (default 1)")
    sec = s.add_argument_group("security", "Plaintext on loopback by default. TLS with --tls-cert and --tls-key; "
                               "mutual TLS (a client certificate signed by this CA required) with --tls-client-ca "
                               "too; a bearer token on every call (health and reflection included) with "
                               "--token-file. Metrics (--metrics-port) stay plain HTTP.")
    sec.add_argument("--tls-cert", metavar="PEM", help="server certificate (chain), PEM: serve TLS")
    sec.add_argument("--tls-key", metavar="PEM", help="private key of --tls-cert, PEM (unencrypted)")
    sec.add_argument("--tls-client-ca", metavar="PEM",
                     help="CA bundle, PEM: require a client certificate signed by it (mutual TLS)")
    sec.add_argument("--token-file", metavar="FILE",
                     help="file holding a shared secret: every RPC must carry `authorization: Bearer <secret>` "
                          "metadata, else UNAUTHENTICATED")
    rl = s.add_argument_group("model reload", "SIGHUP reloads the --model file: its checksum and policy are "
                              "checked first, the new model is swapped in between calls, and a bad file is refused "
                              "(logged, counted in yarnrl_model_reloads_total) while the old model keeps serving.")
    rl.add_argument("--watch", action="store_true",
                    help="also reload when the --model file changes (polls its mtime and sha256)")
    rl.add_argument("--watch-interval", type=float, default=2.0, metavar="SECONDS",
                    help="seconds between looks at the --model file with --watch (default 2)")
    dr = s.add_argument_group("DeepRM on YARN", "how the engine builds DeepRM's job-slot view from plugin heartbeats "
                              "for deeprm-pg, sjf, sjf-holdback, packer and deeprm-random (algorithms.deeprm.view); "
                              "jobs tag their run time with the application tag yarnrl.expected-runtime-ms=MS")
    dr.add_argument("--deeprm-step-ms", type=int, default=1000, metavar="MS",
                    help="real time of one DeepRM time step (default 1000; models are trained in steps)")
    dr.add_argument("--deeprm-image", choices=["node", "pooled"], default="node",
                    help="node: each heartbeat's node is DeepRM's machine (default); pooled: the whole cluster is")
    dr.add_argument("--deeprm-default-runtime-ms", type=int, default=10_000, metavar="MS",
                    help="length of an untagged (or badly tagged) job while its queue has no finished container to "
                         "estimate from (default 10000)")
    ui = s.add_argument_group("console", "a live page for operators (policy_engine/console): the model, decisions/s, "
                              "latency, errors, locality mix (and YARN's in shadow mode), the plugin's fallbacks")
    ui.add_argument("--ui-port", type=int, metavar="N",
                    help="serve the console on this port (0 picks one; its URL is printed at start)")
    ui.add_argument("--ui-host", default="127.0.0.1",
                    help="address of the console (default loopback; any other needs --tls-cert and --token-file)")
    ui.add_argument("--rm-address", metavar="HOST:PORT",
                    help="the ResourceManager's web address (e.g. rm:8088): the console reads the plugin's "
                         "fallbacks and breaker state from its JMX servlet")
    s.add_argument("--reuse-port", action="store_true", help=argparse.SUPPRESS)  # set on the workers
    s.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    s.set_defaults(fn=cmd_serve)

    pl = sub.add_parser("policies", help="list registered policies, one per line")
    pl.add_argument("--json", action="store_true", help="print one JSON object")
    pl.set_defaults(fn=cmd_policies)

    i = sub.add_parser("info", help="ask a running engine for its policy, model and health")
    i.add_argument("--target", default="127.0.0.1:50051", help="HOST:PORT of the engine")
    i.add_argument("--timeout", type=float, default=2.0, help="deadline per call in seconds")
    i.add_argument("--json", action="store_true", help="print one JSON object")
    add_client_security_flags(i)
    i.set_defaults(fn=cmd_info)

    d = sub.add_parser("demo", help="start an engine and drive it with scripted heartbeats",
                       description="Start `policy-engine serve` for each policy, send a scripted sequence of node "
                                   "heartbeats over gRPC and print what each policy decided.")
    d.add_argument("--policies", default="fifo,delay", help="comma-separated policies (default fifo,delay)")
    d.add_argument("--json", action="store_true", help="print only the JSON summary")
    d.set_defaults(fn=cmd_demo)

    add_debug_flag(p)
    return p


def main(argv: list[str] | None = None) -> int:
    return run_main(build_parser(), argv, translate_error)


if __name__ == "__main__":
    sys.exit(main())
