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
from pathlib import Path

from policy_engine import PROTOCOL_VERSION, __version__


def parse_options(pairs: list[str]) -> dict:
    """`--set key=value` pairs; values are read as JSON when they parse (numbers, booleans), else as strings."""
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise SystemExit(f"policy-engine: --set takes KEY=VALUE, got {pair!r}")
        key, raw = pair.split("=", 1)
        try:
            out[key.replace("-", "_")] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.replace("-", "_")] = raw
    return out


def build_policy(name: str, model: str | None, options: dict):
    from policy_engine.policy import UnknownPolicy, create

    try:
        return create(name, model=model, **options)
    except UnknownPolicy as e:
        raise SystemExit(f"policy-engine: {e}") from None
    except (ValueError, TypeError, OSError) as e:
        raise SystemExit(f"policy-engine: cannot build policy {name!r}: {e}") from None


def cmd_serve(args) -> int:
    from policy_engine.server import serve

    if args.model is not None and not Path(args.model).exists():
        raise SystemExit(f"policy-engine: model file {args.model} does not exist")
    if not 0 <= args.port <= 65535:
        raise SystemExit(f"policy-engine: --port {args.port} is not a TCP port")
    if args.webhdfs is not None and (not args.webhdfs.startswith(("http://", "https://")) or args.webhdfs_ttl <= 0):
        raise SystemExit("policy-engine: --webhdfs takes http(s)://HOST:PORT and --webhdfs-ttl a positive number, "
                         f"got {args.webhdfs!r} and {args.webhdfs_ttl}")
    if args.webhdfs is not None:
        import policy_engine.hdfs  # noqa: F401  (fails here, with the extra to install, before anything starts)
    policy = build_policy(args.policy, args.model, parse_options(args.set))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(serve(policy, host=args.host, port=args.port, metrics_port=args.metrics_port,
                          grace_s=args.grace, webhdfs=args.webhdfs, webhdfs_ttl_s=args.webhdfs_ttl,
                          label_locality=args.label_locality))
    except OSError as e:
        raise SystemExit(f"policy-engine: {e}") from None
    return 0


def cmd_policies(args) -> int:
    from policy_engine.policy import available

    specs = available()
    if args.json:
        print(json.dumps({"policies": [
            {"name": s.name, "summary": s.summary, "capabilities": sorted(s.capabilities), "model": s.model}
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

    with PolicyEngineClient(args.target, timeout=args.timeout) as client:
        try:
            info, counters = client.info_counters()
            status = client.health()
        except grpc.RpcError as e:
            raise SystemExit(f"policy-engine: {args.target}: {e.code().name}: {e.details()}") from None
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


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the parent exits, so a crashed test or demo leaves no engine behind."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the caller's cleanup is all there is
        pass


def start_engine_subprocess(policy: str, extra: list[str] | None = None, timeout: float = 60.0):
    """Start `policy-engine serve --port 0` as a child process; return (process, "127.0.0.1:PORT")."""
    cmd = [sys.executable, "-m", "policy_engine.cli", "serve", "--policy", policy, "--port", "0", *(extra or [])]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"}, preexec_fn=_die_with_parent)
    lines = []
    for line in proc.stdout:  # the server prints one line with its bound port once listening
        lines.append(line)
        if "listening on" in line:
            target = line.split("listening on", 1)[1].split()[0]
            return proc, target
    proc.wait(timeout=timeout)
    raise RuntimeError(f"policy-engine serve exited ({proc.returncode}) before listening:\n{''.join(lines)}")


def cmd_demo(args) -> int:
    from policy_engine.client import PolicyEngineClient
    from policy_engine.demo import run_script

    results = {}
    for policy in args.policies.split(","):
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="policy-engine",
        description="yarn-rl policy engine: answers the YARN plugin's (and the emulator's) scheduling requests "
                    f"over gRPC, protocol {PROTOCOL_VERSION}.")
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
    s.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    s.set_defaults(fn=cmd_serve)

    pl = sub.add_parser("policies", help="list registered policies, one per line")
    pl.add_argument("--json", action="store_true", help="print one JSON object")
    pl.set_defaults(fn=cmd_policies)

    i = sub.add_parser("info", help="ask a running engine for its policy, model and health")
    i.add_argument("--target", default="127.0.0.1:50051", help="HOST:PORT of the engine")
    i.add_argument("--timeout", type=float, default=2.0, help="deadline per call in seconds")
    i.add_argument("--json", action="store_true", help="print one JSON object")
    i.set_defaults(fn=cmd_info)

    d = sub.add_parser("demo", help="start an engine and drive it with scripted heartbeats",
                       description="Start `policy-engine serve` for each policy, send a scripted sequence of node "
                                   "heartbeats over gRPC and print what each policy decided.")
    d.add_argument("--policies", default="fifo,delay", help="comma-separated policies (default fifo,delay)")
    d.add_argument("--json", action="store_true", help="print only the JSON summary")
    d.set_defaults(fn=cmd_demo)

    args = p.parse_args(argv)
    from policy_engine.extras import MissingExtra

    try:
        return args.fn(args)
    except MissingExtra as e:
        raise SystemExit(f"policy-engine: {e}") from None


if __name__ == "__main__":
    sys.exit(main())
