#!/usr/bin/env python3
"""A TCP fault proxy between the ResourceManager's plugin and the policy engine (Python stdlib only).

It passes bytes through and, on command, injects the faults of benchmarks/cluster_faults.py:

    delay MS          every chunk waits MS milliseconds in each direction (0: none). A reader stamps each chunk and
                      a writer sends it when due, so latency does not throttle throughput: an engine slower than
                      the plugin's deadline, the engine itself untouched
    cut               the path is cut: open connections are reset (RST, as a firewall reject looks to gRPC) and
                      new ones are reset as soon as they are accepted, until `restore`
    restore           the path is whole again
    upstream HOST:PORT  new connections go there; open ones are reset so the client reconnects (there: an engine
                      answering invalid schedules, docker_cluster/invalid_engine.py, and back)
    status            the state, also answered after every command

Commands are one line on the control port; the answer is one JSON line. In the container cluster
(docker_cluster/cluster.py, ClusterSpec.fault_proxy) the proxy runs as host `faultproxy` in the engine image, and the
ResourceManager's `yarnrl.engine.address` points at it; the control port is published on 127.0.0.1.

    python -m docker_cluster.fault_proxy --listen 0.0.0.0:50051 --upstream engine:50051 --control 0.0.0.0:7070
    printf 'delay 200\\n' | nc 127.0.0.1 7070

The Java twin for the one-JVM mini cluster is yarn_plugin/src/test/java/org/yarnrl/yarn/TcpProxy.java.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import struct
import sys
import time

CHUNK = 65536
CONNECT_TIMEOUT_S = 5.0


def _split(addr: str, what: str) -> tuple[str, int]:
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(f"{what}: expected HOST:PORT, got {addr!r}")
    return host, int(port)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with RST (SO_LINGER 0), not FIN: what a cut path or a firewall reject looks like to the peer."""
    sock = writer.get_extra_info("socket")
    try:
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    writer.transport.abort()


class FaultProxy:
    """The proxy's state and its connections; `command(line)` applies one control command."""

    def __init__(self, upstream: tuple[str, int]):
        self.upstream = upstream
        self.delay_s = 0.0
        self.cut = False
        self.generation = 0  # bumped by every cut / upstream change: a connection set up across one is dropped
        self.connections: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self.accepted = self.refused = self.failed_upstream = self.dropped = 0

    # ------------------------------------------------------------------------------------------- data path
    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        if self.cut:
            self.refused += 1
            _reset(writer)
            return
        gen = self.generation
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(*self.upstream),
                                                          CONNECT_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError):
            # upstream down (killed engine): the client sees its connection close, as with no proxy between
            self.failed_upstream += 1
            writer.close()
            return
        if self.cut or gen != self.generation:  # cut or re-pointed while connecting
            self.refused += 1
            _reset(writer)
            _reset(up_writer)
            return
        for w in (writer, up_writer):
            sock = w.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pair = (writer, up_writer)
        self.connections.add(pair)
        try:
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        finally:
            self.connections.discard(pair)
            for w in pair:
                w.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue = asyncio.Queue()

        async def read() -> None:
            try:
                while data := await reader.read(CHUNK):
                    queue.put_nowait((time.monotonic() + self.delay_s, data))
            except (OSError, ConnectionError):
                pass
            finally:
                queue.put_nowait(None)

        async def write() -> None:
            try:
                while (item := await queue.get()) is not None:
                    due, data = item
                    wait = due - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    writer.write(data)
                    await writer.drain()
            except (OSError, ConnectionError, RuntimeError):
                pass
            finally:
                writer.close()  # one side gone: the other goes too (its reader sees EOF), as a TCP proxy should

        await asyncio.gather(read(), write())

    def _drop_all(self) -> None:
        self.generation += 1
        for pair in list(self.connections):
            self.dropped += 1
            for w in pair:
                _reset(w)
        self.connections.clear()

    # ------------------------------------------------------------------------------------------- control
    def state(self) -> dict:
        return {"delay_ms": round(self.delay_s * 1000), "cut": self.cut,
                "upstream": f"{self.upstream[0]}:{self.upstream[1]}", "open": len(self.connections),
                "accepted": self.accepted, "refused": self.refused, "failed_upstream": self.failed_upstream,
                "dropped": self.dropped}

    def command(self, line: str) -> dict:
        """Apply one command line; the new state, or {"error": ...} for a bad one (state unchanged)."""
        words = line.split()
        try:
            if not words:
                raise ValueError("empty command")
            cmd, args = words[0].lower(), words[1:]
            if cmd == "delay" and len(args) == 1:
                ms = float(args[0])
                if not 0 <= ms <= 600_000:
                    raise ValueError(f"delay: 0..600000 ms, got {args[0]}")
                self.delay_s = ms / 1000.0
            elif cmd == "cut" and not args:
                self.cut = True
                self._drop_all()
            elif cmd == "restore" and not args:
                self.cut = False
            elif cmd == "upstream" and len(args) == 1:
                self.upstream = _split(args[0], "upstream")
                self._drop_all()
            elif cmd == "status" and not args:
                pass
            else:
                raise ValueError(f"unknown command {line.strip()!r}: delay MS | cut | restore | upstream HOST:PORT "
                                 f"| status")
        except ValueError as e:
            return {"error": str(e)}
        return self.state()

    async def control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                writer.write((json.dumps(self.command(line.decode(errors="replace"))) + "\n").encode())
                await writer.drain()
        except (OSError, ConnectionError):
            pass
        finally:
            writer.close()


async def start(listen: tuple[str, int], upstream: tuple[str, int], control: tuple[str, int]):
    """Start both servers; returns (proxy, data server, control server) (port 0: any free one)."""
    proxy = FaultProxy(upstream)
    data = await asyncio.start_server(proxy.handle, *listen)
    ctl = await asyncio.start_server(proxy.control, *control)
    return proxy, data, ctl


def send(control: tuple[str, int], line: str, timeout_s: float = 10.0) -> dict:
    """One command to a running proxy's control port (blocking client, for the benchmark and tests)."""
    with socket.create_connection(control, timeout=timeout_s) as s:
        s.sendall(line.strip().encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
    reply = json.loads(buf.decode())
    if "error" in reply:
        raise ValueError(f"fault proxy: {reply['error']}")
    return reply


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--listen", default="0.0.0.0:50051", help="HOST:PORT the plugin connects to (default %(default)s)")
    ap.add_argument("--upstream", default="engine:50051", help="HOST:PORT of the engine (default %(default)s)")
    ap.add_argument("--control", default="127.0.0.1:7070", help="HOST:PORT of the control port (default %(default)s)")
    args = ap.parse_args(argv)
    try:
        addrs = [_split(a, n) for a, n in ((args.listen, "--listen"), (args.upstream, "--upstream"),
                                           (args.control, "--control"))]
    except ValueError as e:
        ap.error(str(e))

    async def run() -> None:
        proxy, data, ctl = await start(*addrs)
        print(f"fault-proxy: {args.listen} -> {args.upstream}, control on {args.control}", flush=True)
        async with data, ctl:
            await asyncio.gather(data.serve_forever(), ctl.serve_forever())

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass
    except OSError as e:
        print(f"fault-proxy: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
