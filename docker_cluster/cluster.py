#!/usr/bin/env python3
"""A real multi-host Hadoop 3.5.0 cluster in containers, with the yarn-rl plugin and engine.

    NameNode (nn) · ResourceManager with RlScheduler (rm) · workers worker1..4, each one host running a DataNode
    and a NodeManager, in racks /rack1 (worker1, worker2) and /rack2 (worker3, worker4) · the policy engine
    (engine: `policy-engine serve --webhdfs http://nn:9870`) · a client for `hadoop jar` / `hdfs dfs` / `yarn` ·
    with --fault-proxy, a TCP fault proxy in front of the engine (faultproxy: docker_cluster/fault_proxy.py, and
    docker_cluster/invalid_engine.py beside it, run in the engine image from this checkout, mounted read-only): the RM's
    `yarnrl.engine.address` is then `faultproxy:50051`, and benchmarks/cluster_faults.py slows, cuts or re-points
    the path through the proxy's control port (published on 127.0.0.1).

All containers sit on one user-defined bridge network with fixed addresses, and every container's /etc/hosts lists
every host, so forward and reverse lookups agree everywhere (HDFS block hosts == NodeManager hosts: node locality
is real). Only the web UIs and the engine are published, on 127.0.0.1. Containers are created with testcontainers
(no Ryuk reaper: it would be pulled from a registry) and labelled, so `down` in another process finds them.

    python -m docker_cluster up --policy delay [--set node_locality_delay=4] [--name yarnrl] [--worker-egress-mbit 20]
                                [--worker-disk-read-mbps 2 --dn-cache-mb 64]
    python -m docker_cluster shape --worker-egress-mbit 20 | --off     (a running cluster)
    python -m docker_cluster throttle --worker-disk-read-mbps 2 | --off   (a running cluster)
    python -m docker_cluster status | down | exec -- hdfs dfs -ls /

The same module drives the cluster tests (tests/cluster) and the HiBench runner (benchmarks/hibench.py).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import socket
import sys
import tempfile
import time
import urllib.request
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from policy_engine.waiting import WaitTimeout, wait_until

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

from docker_cluster import images

LABEL_CLUSTER = "org.yarnrl.cluster"
LABEL_ROLE = "org.yarnrl.role"
LABEL_POLICY = "org.yarnrl.policy"
EXAMPLES_JAR = "/opt/hadoop/share/hadoop/mapreduce/hadoop-mapreduce-examples.jar"
ENGINE_GRPC_PORT = 50051
ENGINE_METRICS_PORT = 9464
PROXY_CONTROL_PORT = 7070
INVALID_ENGINE_PORT = 50061  # docker_cluster/invalid_engine.py, inside the fault proxy's container (loopback there)
WAITING_ENGINE_PORT = 50062  # docker_cluster/invalid_engine.py --kinds wait: an engine that only waits (same container)
FAULT_SCRIPTS = Path(__file__).resolve().parent  # fault_proxy.py and invalid_engine.py, mounted into the proxy
NN_HTTP_PORT = 9870
RM_HTTP_PORT = 8088
RM_JMX_BEAN = "Hadoop:service=ResourceManager,name=RlScheduler"
LOG_TAIL = 40
MB = 1 << 20
DEFAULT_DN_CACHE_MB = 8  # a DataNode's centralized cache (dfs.datanode.max.locked.memory) unless --dn-cache-mb says


class ClusterError(RuntimeError):
    """A container that exited, a daemon that never registered, a port in use: the message names the container
    and carries its last log lines."""


def _http_json(url: str, timeout: float = 5.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 (loopback URLs built here)
        return json.loads(r.read().decode())


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a port in TIME_WAIT is free to a listener
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


# For JVMs that live seconds (MapReduce tasks of tiny jobs, client commands) on a machine with few cores: C1 alone
# (no C2 compilation of code that runs once), the serial collector (no GC threads per JVM), no perf-data file; about
# 40% less CPU per JVM start (the mini-cluster ITs use the same flags: yarn_plugin's MiniHadoop.TASK_JVM_FLAGS).
SHORT_LIVED_JVM_FLAGS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData"


@dataclass
class ClusterSpec:
    name: str = "yarnrl"
    workers: int = 4
    racks: int = 2
    policy: str = "fifo"
    policy_settings: list[str] = field(default_factory=list)  # --set KEY=VALUE for policy-engine serve
    engine: bool = True  # False: RlScheduler without an engine address (native FIFO)
    # host ports on 127.0.0.1; None = any free port (tests)
    nn_port: int | None = NN_HTTP_PORT
    rm_port: int | None = RM_HTTP_PORT
    metrics_port: int | None = ENGINE_METRICS_PORT
    grpc_port: int | None = ENGINE_GRPC_PORT
    nm_memory_mb: int = 4096
    nm_vcores: int = 4
    engine_deadline_ms: int = 50
    breaker_open_ms: int = 10000
    # egress rate limit of every worker's eth0, Mbit/s (None: unshaped); see egress_shaping_command
    worker_egress_mbit: float | None = None
    fault_proxy: bool = False  # a fault proxy in front of the engine (the RM talks to faultproxy:50051)
    proxy_control_port: int | None = None  # host port of the proxy's control port; None = any free port
    # JVM flags added to the MapReduce AM and task JVMs (mapred-site.xml) and to the commands run in the containers
    # (`hadoop jar`, `hdfs dfs`: HADOOP_CLIENT_OPTS); "" = none. The tests use SHORT_LIVED_JVM_FLAGS.
    task_jvm_opts: str = ""
    # read rate of every worker's disk, MB/s (None: unthrottled); see disk_read_throttle. Also turns the DataNodes'
    # drop-behind reads on, so that every read of an uncached replica pays it
    worker_disk_read_mbps: float | None = None
    # the block device to throttle (None: the one holding Docker's data root, found at start)
    worker_disk_device: str | None = None
    # a DataNode's centralized cache budget (dfs.datanode.max.locked.memory), MB
    dn_cache_mb: int = DEFAULT_DN_CACHE_MB
    # extra yarn-site.xml properties of the ResourceManager only (e.g. yarn.scheduler.maximum-allocation-vcores):
    # the image's template with these added, mounted read-only over it in the RM's container (no image rebuild)
    rm_properties: dict[str, str] = field(default_factory=dict)

    @property
    def dn_cache_bytes(self) -> int:
        return int(self.dn_cache_mb) * MB

    @property
    def drop_behind_reads(self) -> bool:
        """The DataNodes drop the page cache behind their reads (on with a throttled disk)."""
        return self.worker_disk_read_mbps is not None

    @property
    def engine_address(self) -> str:
        """What the ResourceManager's yarnrl.engine.address says."""
        return f"{'faultproxy' if self.fault_proxy else 'engine'}:{ENGINE_GRPC_PORT}"

    @property
    def network(self) -> str:
        return f"{self.name}-net"

    def container(self, role: str) -> str:
        return f"{self.name}-{role}"

    def worker_hosts(self) -> list[str]:
        return [f"worker{i + 1}" for i in range(self.workers)]

    def rack_of(self, i: int) -> str:
        per_rack = max(1, -(-self.workers // self.racks))
        return f"/rack{i // per_rack + 1}"


def egress_shaping_command(rate_mbit: float | None, device: str = "eth0") -> list[str]:
    """The `tc` command that limits a worker's egress to `rate_mbit` (a token bucket, `tbf`), or removes the limit
    (None).

    Why: on one host every container reads every other one's blocks over a bridge at memory speed, so a remote
    block read costs what a local one does and placement cannot change job time. A real cluster is network-bound
    (1-10 Gbit/s NICs behind oversubscribed rack uplinks, next to disks that each stream 100-200 MB/s). Limiting
    each worker's eth0 egress makes every byte a DataNode sends to another worker (a remote block read, a shuffle
    fetch, a replication pipeline) cost bandwidth, while a read of the worker's own DataNode goes to its own address,
    which Linux routes over `lo`, unshaped. (The kernel here has no netem; tbf is built in.) Rack-local and off-rack
    reads cost the same: all workers share one bridge.

    burst: 10 ms at the rate (at least 16 KB, so a packet always fits); latency: up to 200 ms queued before drops."""
    if rate_mbit is None:
        return ["tc", "qdisc", "del", "dev", device, "root"]
    if not (isinstance(rate_mbit, (int, float)) and math.isfinite(rate_mbit) and rate_mbit > 0):
        raise ValueError(f"worker egress rate must be a positive number of Mbit/s, got {rate_mbit!r}")
    burst = max(16 * 1024, int(rate_mbit * 1e6 / 8 * 0.01))
    return ["tc", "qdisc", "replace", "dev", device, "root", "tbf", "rate", f"{rate_mbit:g}mbit",
            "burst", str(burst), "latency", "200ms"]


def check_disk_read_mbps(rate_mbps: float | None) -> None:
    if rate_mbps is not None and not (isinstance(rate_mbps, (int, float)) and math.isfinite(rate_mbps)
                                      and rate_mbps > 0):
        raise ValueError(f"worker disk read rate must be a positive number of MB/s, got {rate_mbps!r}")


def check_dn_cache_mb(cache_mb: int) -> None:
    if not (isinstance(cache_mb, int) and 0 <= cache_mb <= 1 << 20):
        raise ValueError(f"DataNode cache must be a whole number of MB in [0, 1048576], got {cache_mb!r}")


def disk_read_throttle(rate_mbps: float, device: str) -> list[dict]:
    """Docker's `device_read_bps` for a worker: `rate_mbps` MB/s (MiB) of reads from `device`.

    Why: on one host every block file a DataNode reads comes from the same fast disk, or from the page cache, so a
    read of a cached replica costs what a disk read does and HDFS centralized caching (CLQLMRS's cache states) cannot
    change job time. The kernel's blkio throttle (cgroup v1 blkio.throttle.read_bps_device; v2 io.max) limits what
    the worker's processes read from the disk itself, as a real DataNode's spindles do, while reads served from
    memory are free. With it the DataNodes drop the page cache behind their reads (dfs.datanode.drop.cache.behind.reads,
    through CachingDataNode's posix_fadvise), so every read of an uncached replica pays the rate, and a cached replica
    (mmapped by its DataNode, whose pages the kernel does not drop) is read from memory. Writes are not throttled
    (cgroup v1 does not charge buffered writeback to the writer)."""
    check_disk_read_mbps(rate_mbps)
    return [{"Path": device, "Rate": max(1, int(round(rate_mbps * MB)))}]


def docker_root_disk(docker_root: str) -> str:
    """The whole-disk block device (/dev/vda) under Docker's data root on this host: the device blkio throttles
    (a partition's reads are throttled on its disk)."""
    st = os.stat(docker_root)
    node = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if not node.exists():
        raise ClusterError(f"{docker_root} is on device {os.major(st.st_dev)}:{os.minor(st.st_dev)}, which is not a "
                           f"block device here (an overlay or network file system?): give the disk to throttle "
                           f"(--worker-disk-device /dev/...)")
    real = node.resolve()
    if (real / "partition").exists():
        real = real.parent
    return f"/dev/{real.name}"


def parse_read_bps(text: str) -> dict[str, int]:
    """`MAJ:MIN BYTES` lines of blkio.throttle.read_bps_device (v1) or `MAJ:MIN rbps=BYTES ...` of io.max (v2)."""
    import re

    out = {}
    for line in text.splitlines():
        m = re.match(r"\s*(\d+:\d+)\s+(?:.*\brbps=)?(\d+)\b", line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def parse_tbf_rate_mbit(qdisc: str) -> float | None:
    """The rate of a `tc qdisc show` line of a tbf qdisc, in Mbit/s (None: no tbf)."""
    import re

    m = re.search(r"\btbf\b.*?\brate (\d+(?:\.\d+)?)([KMG]?)bit", qdisc)
    if not m:
        return None
    return float(m.group(1)) * {"": 1e-6, "K": 1e-3, "M": 1.0, "G": 1e3}[m.group(2)]


class Cluster:
    """Start, inspect and stop one named cluster. `Cluster.attach(name)` works on a cluster another process
    started (ports and policy are read back from the containers)."""

    def __init__(self, spec: ClusterSpec | None = None):
        self.spec = spec or ClusterSpec()
        self.client = images.connect()
        self.subnet_prefix: str | None = None

    # ------------------------------------------------------------------------------------------ addresses
    def _ips(self) -> dict[str, str]:
        p = self.subnet_prefix
        ips = {"nn": f"{p}.10", "rm": f"{p}.11", "engine": f"{p}.12", "client": f"{p}.13", "faultproxy": f"{p}.14"}
        for i, h in enumerate(self.spec.worker_hosts()):
            ips[h] = f"{p}.{21 + i}"
        return ips

    def _topology(self) -> str:
        ips = self._ips()
        rows = []
        for i, h in enumerate(self.spec.worker_hosts()):
            rows += [f"{h} {self.spec.rack_of(i)}", f"{ips[h]} {self.spec.rack_of(i)}"]
        return ";".join(rows)

    def containers(self) -> list:
        return self.client.containers.list(all=True, filters={"label": f"{LABEL_CLUSTER}={self.spec.name}"})

    def get(self, role: str):
        import docker

        try:
            return self.client.containers.get(self.spec.container(role))
        except docker.errors.NotFound:
            raise ClusterError(f"container {self.spec.container(role)} does not exist (is the cluster up?)") from None

    def host_port(self, role: str, port: int) -> int:
        c = self.get(role)
        c.reload()
        bindings = (c.attrs["NetworkSettings"]["Ports"] or {}).get(f"{port}/tcp") or []
        if not bindings:
            raise ClusterError(f"{c.name}: port {port} is not published")
        return int(bindings[0]["HostPort"])

    @property
    def nn_url(self) -> str:
        return f"http://127.0.0.1:{self.host_port('nn', NN_HTTP_PORT)}"

    @property
    def rm_url(self) -> str:
        return f"http://127.0.0.1:{self.host_port('rm', RM_HTTP_PORT)}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.host_port('engine', ENGINE_METRICS_PORT)}/metrics"

    @property
    def proxy_control(self) -> tuple[str, int]:
        """(host, port) of the fault proxy's control port on 127.0.0.1 (docker_cluster/fault_proxy.py `send`)."""
        if not self.spec.fault_proxy:
            raise ClusterError(f"cluster {self.spec.name!r} has no fault proxy in front of its engine: start it with "
                               f"`docker_cluster/cluster.py up --fault-proxy` (ClusterSpec.fault_proxy)")
        return "127.0.0.1", self.host_port("faultproxy", PROXY_CONTROL_PORT)

    @property
    def engine_target(self) -> str:
        return f"127.0.0.1:{self.host_port('engine', ENGINE_GRPC_PORT)}"

    # ------------------------------------------------------------------------------------------- lifecycle
    def up(self, timeout: float = 300.0, build: bool = True, progress=None) -> "Cluster":
        """Build missing images, start every container and wait until all DataNodes and NodeManagers have
        registered and the engine serves. On failure everything started is removed again."""
        say = progress or (lambda msg: None)
        if build:
            say("checking images (make images)")
            images.ensure_images()
        if self.containers():
            raise ClusterError(f"a cluster named {self.spec.name!r} already exists: "
                               f"`python -m docker_cluster down --name {self.spec.name}` first")
        self._check_ports()
        t0 = time.monotonic()
        try:
            self._create_network()
            say(f"network {self.spec.network} ({self.subnet_prefix}.0/24)")
            self._start("nn", images.HADOOP_IMAGE, ["namenode"], {NN_HTTP_PORT: self.spec.nn_port})
            throttle = self._worker_host_config()
            for h in self.spec.worker_hosts():
                self._start(h, images.HADOOP_IMAGE, ["worker"], {}, host_config=throttle)
            if throttle:
                say(f"worker disk reads limited to {self.spec.worker_disk_read_mbps:g} MB/s on "
                    f"{self.spec.worker_disk_device} (blkio); DataNodes drop the page cache behind reads")
            self._start("rm", images.HADOOP_IMAGE, ["resourcemanager"], {RM_HTTP_PORT: self.spec.rm_port},
                        volumes=self._rm_site_volume())
            if self.spec.engine:
                self.start_engine(self.spec.policy, self.spec.policy_settings, wait=False)
                if self.spec.fault_proxy:
                    self.start_fault_proxy()
            self._start("client", images.HADOOP_IMAGE, ["client"], {})
            if self.spec.worker_egress_mbit is not None:
                self.shape_workers(self.spec.worker_egress_mbit)
                say(f"worker egress limited to {self.spec.worker_egress_mbit:g} Mbit/s (tc tbf on eth0)")
            say("containers started; waiting for DataNodes, NodeManagers and the engine")
            self.wait_ready(timeout=max(10.0, timeout - (time.monotonic() - t0)))
        except BaseException:
            self.down(quiet=True)
            raise
        return self

    def _worker_host_config(self) -> dict:
        """The workers' docker create options: the disk read throttle, when asked for."""
        if self.spec.worker_disk_read_mbps is None:
            return {}
        if self.spec.worker_disk_device is None:
            self.spec.worker_disk_device = docker_root_disk(self.client.info().get("DockerRootDir", "/var/lib/docker"))
        return {"device_read_bps": disk_read_throttle(self.spec.worker_disk_read_mbps, self.spec.worker_disk_device)}

    def worker_disk_read_limits(self) -> dict[str, dict[str, int]]:
        """What the kernel applies to each worker: {host: {"MAJ:MIN": bytes/s}}, read in the container from its
        blkio cgroup (v1 blkio.throttle.read_bps_device, v2 io.max); {} for an unthrottled worker."""
        script = ("cat /sys/fs/cgroup/blkio/blkio.throttle.read_bps_device 2>/dev/null || "
                  "cat /sys/fs/cgroup/io.max 2>/dev/null || true")
        return {h: parse_read_bps(self.exec(script, role=h, timeout=30)[1]) for h in self.spec.worker_hosts()}

    def throttle_disk_reads(self, rate_mbps: float | None, hosts: list[str] | None = None) -> dict[str, dict[str, int]]:
        """Set (None: lift) the disk read limit of running workers (all, or `hosts`) by writing their blkio cgroup
        from this host (cgroup v1 blkio.throttle.read_bps_device, v2 io.max; needs root here). What `up
        --worker-disk-read-mbps` gives at creation, for a cluster already running; the DataNodes' drop-behind reads
        are a start-time setting, so without it a block read stays in the page cache (drop_block_page_cache evicts
        it). Returns worker_disk_read_limits()."""
        check_disk_read_mbps(rate_mbps)
        if os.geteuid() != 0:
            raise ClusterError("throttling worker disks on a running cluster needs root on this host (the containers' "
                               "blkio cgroups)")
        device = self.spec.worker_disk_device or docker_root_disk(
            self.client.info().get("DockerRootDir", "/var/lib/docker"))
        st = os.stat(device)
        dev = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
        for h in hosts or self.spec.worker_hosts():
            c = self.get(h)
            c.reload()
            groups = Path(f"/proc/{c.attrs['State']['Pid']}/cgroup").read_text().splitlines()
            v1 = [g.split(":", 2)[2] for g in groups if "blkio" in g.split(":")[1].split(",")]
            if v1:
                path = Path("/sys/fs/cgroup/blkio" + v1[0]) / "blkio.throttle.read_bps_device"
                line = f"{dev} {0 if rate_mbps is None else max(1, int(round(rate_mbps * MB)))}"
            else:
                path = Path("/sys/fs/cgroup" + groups[0].split(":", 2)[2]) / "io.max"
                line = f"{dev} rbps={'max' if rate_mbps is None else max(1, int(round(rate_mbps * MB)))}"
            try:
                path.write_text(line + "\n")
            except OSError as e:
                raise ClusterError(f"{c.name}: cannot write {line!r} to {path}: {e}") from None
        # (spec.worker_disk_read_mbps stays what the cluster was started with: it also says whether the DataNodes
        # drop behind reads)
        return self.worker_disk_read_limits()

    def disk_read_bytes(self, host: str) -> int:
        """Bytes a worker's processes have read from its disks (the blkio cgroup's own counter: v1
        blkio.throttle.io_service_bytes `Read`, v2 io.stat `rbytes`), for a read that the page cache did not serve."""
        import re

        script = ("cat /sys/fs/cgroup/blkio/blkio.throttle.io_service_bytes 2>/dev/null || "
                  "cat /sys/fs/cgroup/io.stat 2>/dev/null || true")
        text = self.exec(script, role=host, timeout=30)[1]
        return (sum(int(n) for n in re.findall(r"^\d+:\d+ Read (\d+)$", text, re.M))
                + sum(int(n) for n in re.findall(r"\brbytes=(\d+)", text)))

    def drop_block_page_cache(self) -> None:
        """Evict every worker's block files from the page cache (POSIX_FADV_DONTNEED on each, `dd iflag=nocache`), so
        the next read of an uncached replica comes from the disk: input just written sits in the page cache. The
        pages of cached replicas stay (their DataNode holds them mapped, which fadvise leaves alone)."""
        script = ("sync && find /data/dn -type f -name 'blk_*' ! -name '*.meta' "
                  "-exec dd if={} iflag=nocache count=0 status=none \\;")
        for h in self.spec.worker_hosts():
            self.exec(script, role=h, timeout=120)

    def _check_ports(self) -> None:
        s = self.spec
        for what, port, env in (("NameNode UI", s.nn_port, "nn_port"), ("ResourceManager UI", s.rm_port, "rm_port"),
                                ("engine metrics", s.metrics_port if s.engine else None, "metrics_port"),
                                ("engine gRPC", s.grpc_port if s.engine else None, "grpc_port")):
            if port is not None and not _port_free(port):
                raise ClusterError(f"port {port} on 127.0.0.1 ({what}) is already taken: free it, pick another "
                                   f"(--{env.replace('_', '-')}), or `make cluster-down` a cluster still running")

    def _create_network(self) -> None:
        import docker

        ipam_pool = docker.types.IPAMPool
        seed = zlib.crc32(self.spec.name.encode()) % 200
        last: Exception | None = None
        for k in range(20):  # a /24 no other network uses
            third = 20 + (seed + k) % 200
            prefix = f"172.29.{third}"
            try:
                self.client.networks.create(
                    self.spec.network, driver="bridge",
                    ipam=docker.types.IPAMConfig(pool_configs=[ipam_pool(subnet=f"{prefix}.0/24")]),
                    labels={LABEL_CLUSTER: self.spec.name})
                self.subnet_prefix = prefix
                return
            except docker.errors.APIError as e:
                last = e
                if "overlap" not in str(e).lower():
                    raise ClusterError(f"cannot create network {self.spec.network}: {e}") from None
        raise ClusterError(f"no free 172.29.x.0/24 subnet for {self.spec.network}: {last}")

    def _load_subnet(self) -> None:
        if self.subnet_prefix is None:
            net = self.client.networks.get(self.spec.network)
            subnet = net.attrs["IPAM"]["Config"][0]["Subnet"]
            self.subnet_prefix = subnet.rsplit(".", 1)[0]

    def _rm_site_volume(self) -> dict[str, tuple[str, str]] | None:
        """The RM's yarn-site template with spec.rm_properties added (None when there are none)."""
        if not self.spec.rm_properties:
            return None
        from xml.sax.saxutils import escape

        template = (images.DOCKER_DIR / "hadoop" / "conf" / "yarn-site.xml.in").read_text()
        extra = "".join(f"  <property><name>{escape(k)}</name><value>{escape(str(v))}</value></property>\n"
                        for k, v in self.spec.rm_properties.items())
        path = Path(tempfile.gettempdir()) / f"yarnrl-{self.spec.name}-rm-yarn-site.xml.in"
        path.write_text(template.replace("</configuration>", extra + "</configuration>"))
        return {str(path): ("/opt/hadoop/etc/templates/yarn-site.xml.in", "ro")}

    def _env(self, role: str) -> dict[str, str]:
        s = self.spec
        return {
            "YARNRL_HOSTNAME": role,
            "YARNRL_NN_HOST": "nn",
            "YARNRL_RM_HOST": "rm",
            "YARNRL_ENGINE_ADDRESS": s.engine_address if s.engine else "",
            "YARNRL_ENGINE_DEADLINE_MS": str(s.engine_deadline_ms),
            "YARNRL_ENGINE_BREAKER_OPEN_MS": str(s.breaker_open_ms),
            "YARNRL_NM_MEMORY_MB": str(s.nm_memory_mb),
            "YARNRL_NM_VCORES": str(s.nm_vcores),
            "YARNRL_TOPOLOGY": self._topology(),
            "YARNRL_TASK_JVM_OPTS": s.task_jvm_opts,
            "HADOOP_CLIENT_OPTS": s.task_jvm_opts,
            "YARNRL_DN_CACHE_BYTES": str(s.dn_cache_bytes),
            "YARNRL_DN_DROP_BEHIND_READS": "true" if s.drop_behind_reads else "false",
        }

    def _start(self, role: str, image: str, command: list[str], ports: dict[int, int | None],
               labels: dict[str, str] | None = None, env: dict[str, str] | None = None,
               volumes: dict[str, tuple[str, str]] | None = None, entrypoint: list[str] | None = None,
               host_config: dict | None = None):
        from docker.types import EndpointConfig
        from testcontainers.core.container import DockerContainer

        self._load_subnet()
        ips = self._ips()
        c = DockerContainer(image).with_name(self.spec.container(role)).with_command(command)
        for k, v in (env if env is not None else self._env(role)).items():
            c.with_env(k, v)
        for container_port, host_port in ports.items():
            # published on loopback only (with_bind_ports takes no host address)
            c.ports[container_port] = ("127.0.0.1", host_port)
        for host_path, (container_path, mode) in (volumes or {}).items():
            c.with_volume_mapping(host_path, container_path, mode)
        api_version = self.client.api.api_version
        c.with_kwargs(
            **({"entrypoint": entrypoint} if entrypoint else {}),
            **(host_config or {}),
            hostname=role,
            labels={LABEL_CLUSTER: self.spec.name, LABEL_ROLE: role, **(labels or {})},
            extra_hosts={h: ip for h, ip in ips.items() if h != role},
            network=self.spec.network,
            networking_config={self.spec.network: EndpointConfig(api_version, aliases=[role],
                                                                  ipv4_address=ips[role])},
        )
        try:
            c.start()
        except Exception as e:
            raise ClusterError(f"cannot start {self.spec.container(role)}: {str(e).splitlines()[0]}") from None
        return c

    def start_engine(self, policy: str, settings: list[str] | None = None, wait: bool = True,
                     timeout: float = 60.0, args: list[str] | None = None,
                     volumes: dict[str, tuple[str, str]] | None = None) -> None:
        """(Re)start the engine container with a policy; the ResourceManager reconnects to the same address.
        `args`: more `serve` arguments (`--model /models/x.safetensors`); `volumes`: host path -> (container path,
        "ro" | "rw"), for model files and a learner's save_to directory."""
        import docker

        try:
            self.client.containers.get(self.spec.container("engine")).remove(force=True)
        except docker.errors.NotFound:
            pass
        cmd = ["serve", "--host", "0.0.0.0", "--port", str(ENGINE_GRPC_PORT), "--metrics-port",
               str(ENGINE_METRICS_PORT), "--policy", policy, "--webhdfs", f"http://nn:{NN_HTTP_PORT}", "-v"]
        for kv in settings or []:
            cmd += ["--set", kv]
        cmd += list(args or [])
        s = self.spec
        self._start("engine", images.ENGINE_IMAGE, cmd,
                    {ENGINE_GRPC_PORT: s.grpc_port, ENGINE_METRICS_PORT: s.metrics_port},
                    labels={LABEL_POLICY: policy, LABEL_POLICY + ".settings": json.dumps(list(settings or []))},
                    env={}, volumes=volumes)
        self.spec.policy, self.spec.policy_settings = policy, list(settings or [])
        if wait:
            self._wait(lambda: self._engine_serving(), timeout, "the engine to serve", ["engine"])

    def shape_workers(self, rate_mbit: float | None) -> dict[str, str]:
        """Limit (or, with None, unlimit) every worker's eth0 egress: `tc` run from this host in the container's
        network namespace (`nsenter -t PID -n`; needs root here, nothing in the image). Returns each worker's
        qdisc as `tc qdisc show` prints it. The limit lives as long as the container."""
        import subprocess

        if os.geteuid() != 0:
            raise ClusterError("shaping worker egress needs root on this host (nsenter into the containers' "
                               "network namespaces, then tc)")
        out = {}
        for h in self.spec.worker_hosts():
            c = self.get(h)
            c.reload()
            pid = str(c.attrs["State"]["Pid"])
            cmd = egress_shaping_command(rate_mbit)
            r = subprocess.run(["nsenter", "-t", pid, "-n", *cmd], capture_output=True, text=True)
            if r.returncode != 0 and not (rate_mbit is None and "No such file" in r.stderr + r.stdout):
                raise ClusterError(f"{c.name}: `{' '.join(cmd)}` failed: {(r.stderr or r.stdout).strip()}")
            show = subprocess.run(["nsenter", "-t", pid, "-n", "tc", "qdisc", "show", "dev", "eth0"],
                                  capture_output=True, text=True)
            out[h] = show.stdout.strip()
        self.spec.worker_egress_mbit = rate_mbit
        return out

    def worker_egress(self) -> dict[str, str]:
        """Each worker's eth0 root qdisc as `tc` shows it (the shaping in force)."""
        import subprocess

        out = {}
        for h in self.spec.worker_hosts():
            c = self.get(h)
            c.reload()
            r = subprocess.run(["nsenter", "-t", str(c.attrs["State"]["Pid"]), "-n", "tc", "qdisc", "show", "dev",
                                "eth0"], capture_output=True, text=True)
            out[h] = r.stdout.strip()
        return out

    def start_fault_proxy(self) -> None:
        """The fault proxy's container: docker_cluster/fault_proxy.py (faultproxy:50051 -> engine:50051, control port
        published on 127.0.0.1) and docker_cluster/invalid_engine.py on its loopback, both from this checkout, mounted
        read-only into the engine image (no image of their own)."""
        script = "/yarnrl-faults"
        cmd = (f"python {script}/invalid_engine.py --host 127.0.0.1 --port {INVALID_ENGINE_PORT} & "
               f"python {script}/invalid_engine.py --host 127.0.0.1 --port {WAITING_ENGINE_PORT} --kinds wait & "
               f"exec python {script}/fault_proxy.py --listen 0.0.0.0:{ENGINE_GRPC_PORT} "
               f"--upstream engine:{ENGINE_GRPC_PORT} --control 0.0.0.0:{PROXY_CONTROL_PORT}")
        volumes = {str(FAULT_SCRIPTS / f): (f"{script}/{f}", "ro") for f in ("fault_proxy.py", "invalid_engine.py")}
        self._start("faultproxy", images.ENGINE_IMAGE, ["-c", cmd], {PROXY_CONTROL_PORT: self.spec.proxy_control_port},
                    env={"PYTHONUNBUFFERED": "1"}, volumes=volumes, entrypoint=["bash"])

    def kill_engine(self) -> None:
        self.get("engine").kill()

    def down(self, quiet: bool = False) -> list[str]:
        """Remove every container and the network of this cluster (also half-started ones)."""
        import docker

        removed = []
        for c in self.containers():
            for attempt in range(5):
                try:
                    c.remove(force=True, v=True)
                    removed.append(c.name)
                    break
                except docker.errors.NotFound:
                    break
                except docker.errors.APIError as e:
                    # on a loaded machine the daemon may give up waiting for a killed container's exit event
                    # ("tried to kill container, but did not receive an exit event"); the kill goes on: try again
                    if attempt == 4:
                        raise ClusterError(f"cannot remove {c.name}: {e}") from None
                    time.sleep(3 * (attempt + 1))
        for net in self.client.networks.list(names=[self.spec.network]):
            try:
                net.remove()
                removed.append(net.name)
            except docker.errors.APIError as e:
                if not quiet:
                    raise ClusterError(f"cannot remove network {net.name}: {e}") from None
        return removed

    @classmethod
    def attach(cls, name: str = "yarnrl") -> "Cluster":
        cl = cls(ClusterSpec(name=name))
        found = cl.containers()
        if not found:
            raise ClusterError(f"no cluster named {name!r} is running: `make cluster-up` starts one")
        cl.spec.workers = sum(1 for c in found if c.labels.get(LABEL_ROLE, "").startswith("worker"))
        for c in found:
            if c.labels.get(LABEL_ROLE) == "engine":
                cl.spec.policy = c.labels.get(LABEL_POLICY, cl.spec.policy)
                cl.spec.policy_settings = json.loads(c.labels.get(LABEL_POLICY + ".settings", "[]"))
        cl.spec.engine = any(c.labels.get(LABEL_ROLE) == "engine" for c in found)
        cl.spec.fault_proxy = any(c.labels.get(LABEL_ROLE) == "faultproxy" for c in found)
        for c in found:  # a worker's DataNode cache and disk read throttle, from its environment and host config
            if c.labels.get(LABEL_ROLE, "").startswith("worker"):
                env = dict(kv.split("=", 1) for kv in c.attrs["Config"]["Env"] if "=" in kv)
                cl.spec.dn_cache_mb = int(env.get("YARNRL_DN_CACHE_BYTES", DEFAULT_DN_CACHE_MB * MB)) // MB
                limits = c.attrs["HostConfig"].get("BlkioDeviceReadBps") or []
                if limits:
                    cl.spec.worker_disk_device = limits[0]["Path"]
                    cl.spec.worker_disk_read_mbps = limits[0]["Rate"] / MB
                break
        for c in found:  # the plugin's settings, from the ResourceManager's environment
            if c.labels.get(LABEL_ROLE) == "rm":
                env = dict(kv.split("=", 1) for kv in c.attrs["Config"]["Env"] if "=" in kv)
                cl.spec.engine_deadline_ms = int(env.get("YARNRL_ENGINE_DEADLINE_MS", cl.spec.engine_deadline_ms))
                cl.spec.breaker_open_ms = int(env.get("YARNRL_ENGINE_BREAKER_OPEN_MS", cl.spec.breaker_open_ms))
        # restarts publish the same ports again (read back from the containers)
        for role, port, attr in (("nn", NN_HTTP_PORT, "nn_port"), ("rm", RM_HTTP_PORT, "rm_port"),
                                 ("engine", ENGINE_METRICS_PORT, "metrics_port"),
                                 ("engine", ENGINE_GRPC_PORT, "grpc_port"),
                                 ("faultproxy", PROXY_CONTROL_PORT, "proxy_control_port")):
            try:
                setattr(cl.spec, attr, cl.host_port(role, port))
            except ClusterError:
                pass
        cl._load_subnet()
        if os.geteuid() == 0:  # the shaping in force (tc prints e.g. "qdisc tbf 8001: root refcnt 2 rate 20Mbit ...")
            try:
                rates = {parse_tbf_rate_mbit(q) for q in cl.worker_egress().values()}
                cl.spec.worker_egress_mbit = rates.pop() if len(rates) == 1 else None
            except (OSError, ClusterError):
                pass
        return cl

    # ---------------------------------------------------------------------------------------- readiness
    def logs(self, role: str, lines: int = LOG_TAIL) -> str:
        import docker

        try:
            c = self.client.containers.get(self.spec.container(role))
        except docker.errors.NotFound:
            return f"(no container {self.spec.container(role)})"
        return c.logs(tail=lines).decode(errors="replace")

    def _failure(self, what: str, roles: list[str]) -> ClusterError:
        parts = [what]
        for r in roles:
            name = self.spec.container(r)
            try:
                c = self.get(r)
                c.reload()
                state = c.attrs["State"]
                status = f"{state['Status']}" + (f", exit code {state['ExitCode']}" if state["Status"] == "exited" else "")
            except ClusterError:
                status = "missing"
            parts.append(f"--- {name} ({status}), last {LOG_TAIL} log lines:\n{self.logs(r).rstrip()}")
        return ClusterError("\n".join(parts))

    def _check_running(self) -> None:
        for c in self.containers():
            c.reload()
            if c.status not in ("running", "created", "restarting"):
                role = c.labels.get(LABEL_ROLE, c.name)
                raise self._failure(f"container {c.name} exited early", [role])

    def _wait(self, cond, timeout: float, what: str, roles: list[str], interval: float = 1.0) -> None:
        """Polls cond until it holds; a container that exited stops the wait at once; the failure carries the
        roles' logs."""
        def running_and(cond=cond):
            self._check_running()
            return cond()

        try:
            wait_until(running_and, timeout, what, interval, retry_on=(OSError, ValueError, KeyError, IndexError))
        except WaitTimeout as e:
            raise self._failure(str(e), roles) from None

    def live_datanodes(self) -> list[str]:
        info = _http_json(f"{self.nn_url}/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo")["beans"][0]
        return sorted(k.split(":")[0] for k in json.loads(info["LiveNodes"]))

    def running_nodemanagers(self) -> dict[str, str]:
        nodes = (_http_json(f"{self.rm_url}/ws/v1/cluster/nodes").get("nodes") or {}).get("node") or []
        return {n["nodeHostName"]: n["rack"] for n in nodes if n.get("state") == "RUNNING"}

    def running_apps(self) -> list[dict]:
        apps = (_http_json(f"{self.rm_url}/ws/v1/cluster/apps?states=RUNNING").get("apps") or {}).get("app") or []
        return apps

    def _engine_serving(self) -> bool:
        with urllib.request.urlopen(self.metrics_url, timeout=5) as r:  # noqa: S310
            return r.status == 200

    def wait_ready(self, timeout: float = 240.0) -> None:
        hosts = self.spec.worker_hosts()
        until = time.monotonic() + timeout

        def left() -> float:
            return max(5.0, until - time.monotonic())

        def missing_dn() -> list[str]:
            return [h for h in hosts if h not in self.live_datanodes()]

        def missing_nm() -> list[str]:
            return [h for h in hosts if h not in self.running_nodemanagers()]

        try:
            self._wait(lambda: not missing_dn(), left(), f"{len(hosts)} DataNodes to register", ["nn"])
        except ClusterError as e:
            raise self._extend(e, missing_dn)
        try:
            self._wait(lambda: not missing_nm(), left(), f"{len(hosts)} NodeManagers to register", ["rm"])
        except ClusterError as e:
            raise self._extend(e, missing_nm)
        self._wait(lambda: _http_json(f"{self.nn_url}/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo")
                   ["beans"][0]["Safemode"] == "", left(), "the NameNode to leave safe mode", ["nn"])
        if self.spec.engine:
            self._wait(self._engine_serving, left(), "the engine to serve", ["engine"])
            if self.spec.fault_proxy:
                self._wait(self._proxy_answers, left(), "the fault proxy's control port", ["faultproxy"])
            self._wait(lambda: self.rm_jmx()["EngineAddress"] == self.spec.engine_address, left(),
                       "RlScheduler on the ResourceManager's JMX", ["rm"])

    def _proxy_answers(self) -> bool:
        from docker_cluster import fault_proxy

        return "upstream" in fault_proxy.send(self.proxy_control, "status", timeout_s=5)

    def _extend(self, err: ClusterError, missing) -> ClusterError:
        try:
            roles = missing()
        except Exception:
            roles = self.spec.worker_hosts()
        return ClusterError(str(err) + "\n" + str(self._failure(f"not registered: {', '.join(roles)}", roles)))

    # ------------------------------------------------------------------------------------------- queries
    def rm_jmx(self) -> dict:
        beans = _http_json(f"{self.rm_url}/jmx?qry={RM_JMX_BEAN}")["beans"]
        if not beans:
            raise KeyError(f"{RM_JMX_BEAN} not on the ResourceManager's JMX")
        return beans[0]

    def engine_metric(self, name: str) -> float:
        """Sum of one Prometheus metric family's samples (all label values) from the engine's /metrics."""
        from policy_engine.metrics_scrape import Metrics

        return Metrics.scrape(self.metrics_url, timeout=5).total(name)

    def block_locations(self, path: str) -> list[dict]:
        """WebHDFS GETFILEBLOCKLOCATIONS of one file, through the NameNode's published port."""
        url = f"{self.nn_url}/webhdfs/v1{path}?op=GETFILEBLOCKLOCATIONS&user.name=root"
        return _http_json(url, timeout=10)["BlockLocations"]["BlockLocation"]

    def exec(self, command: str | list[str], role: str = "client", timeout: float = 600.0,
             check: bool = True) -> tuple[int, str]:
        """Run a command in a container (default: the client), bounded by coreutils `timeout` inside it."""
        cmd = command if isinstance(command, str) else shlex.join(command)
        wrapped = ["timeout", "-k", "10", str(int(timeout)), "bash", "-c", cmd]
        rc, out = self.get(role).exec_run(wrapped, demux=False)
        text = (out or b"").decode(errors="replace")
        if check and rc != 0:
            tail = "\n".join(text.splitlines()[-LOG_TAIL:])
            why = "timed out" if rc == 124 else f"exit code {rc}"
            raise ClusterError(f"`{cmd}` in {self.spec.container(role)} failed ({why}); last output lines:\n{tail}")
        return rc, text

    def summary(self) -> dict:
        s = {"name": self.spec.name, "workers": {h: self.running_nodemanagers().get(h) for h in self.spec.worker_hosts()},
             "namenode_ui": self.nn_url, "resourcemanager_ui": self.rm_url}
        if self.spec.engine:
            s.update(policy=self.spec.policy, engine_metrics=self.metrics_url, engine_grpc=self.engine_target)
        if self.spec.fault_proxy:
            s["fault_proxy_control"] = "%s:%d" % self.proxy_control
        s["dn_cache_mb"] = self.spec.dn_cache_mb
        if self.spec.worker_disk_read_mbps is not None:
            s["worker_disk_read_mbps"] = self.spec.worker_disk_read_mbps
            s["worker_disk_device"] = self.spec.worker_disk_device
        return s


# ------------------------------------------------------------------------------------------------------- CLI
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n")[3])
    sub = ap.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="build missing images, start the cluster, wait until every node registered")
    up.add_argument("--policy", default="fifo", help="engine policy (`policy-engine policies`; default fifo)")
    up.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="policy setting (repeatable)")
    up.add_argument("--no-engine", action="store_true", help="RlScheduler without an engine (native FIFO)")
    up.add_argument("--fault-proxy", action="store_true",
                    help="a TCP fault proxy in front of the engine (docker_cluster/fault_proxy.py; for "
                         "benchmarks/cluster_faults.py's slow, invalid and netcut cases)")
    up.add_argument("--breaker-open-ms", type=int, default=10000,
                    help="how long the plugin's breaker stays open after 3 failed calls (default %(default)s; "
                         "benchmarks/cluster_faults.py uses 3000)")
    up.add_argument("--workers", type=int, default=4, help="worker hosts, each a DataNode + NodeManager (default 4)")
    egress_help = ("limit every worker's eth0 egress to this many Mbit/s (tc tbf, set from this host; needs root): a "
                   "remote block read, a shuffle fetch, a replication pipeline cost bandwidth, a read of the worker's "
                   "own DataNode does not (it goes over lo) - a network-bound cluster like a real one with "
                   "oversubscribed links. Default: unshaped")
    up.add_argument("--worker-egress-mbit", type=float, default=None, metavar="MBIT", help=egress_help)
    up.add_argument("--worker-disk-read-mbps", type=float, default=None, metavar="MBPS",
                    help="limit every worker's reads from the disk under Docker's data root to MBPS MB/s (Docker's "
                         "--device-read-bps, the kernel's blkio throttle) and let the DataNodes drop the page cache "
                         "behind their reads: every read of an uncached replica costs disk time, a replica in the "
                         "DataNode's centralized cache (mmapped) is read from memory. Default: unthrottled")
    up.add_argument("--worker-disk-device", default=None, metavar="DEV",
                    help="the block device --worker-disk-read-mbps throttles (default: the disk holding Docker's data "
                         "root, e.g. /dev/vda)")
    up.add_argument("--dn-cache-mb", type=int, default=DEFAULT_DN_CACHE_MB, metavar="MB",
                    help="each DataNode's centralized cache budget (dfs.datanode.max.locked.memory; default "
                         "%(default)s). The DataNodes do not mlock (no native libhadoop here), so the 8 MB memlock "
                         "cap does not bound it; cached replicas stay in memory as mmapped page cache")
    up.add_argument("--nm-vcores", type=int, default=4,
                    help="vcores of each NodeManager (default 4). RlScheduler's FIFO counts memory only (8 maps of "
                         "512 MB fit a 4096 MB node of 4 vcores), the engine counts vcores too: 8 lets the engine "
                         "place as many containers on a node as YARN itself does")
    up.add_argument("--timeout", type=float, default=600,
                    help="seconds to wait for the cluster (default 600: 10 JVMs start on a loaded 2-core machine in 3-6 min)")
    fed = up.add_argument_group("federation (docker_cluster/federation.py)")
    fed.add_argument("--federation", type=int, default=0, metavar="N",
                     help="a YARN Federation instead: ZooKeeper, a Router with the learned Router policy, N >= 2 "
                          "sub-clusters (an RM + workers each), HDFS, the engine (--policy, a Route policy) and a "
                          "client; host ports are picked by Docker")
    fed.add_argument("--sc-memory", default="4096,2048", metavar="MB,MB,...",
                     help="NodeManager memory of each sub-cluster's workers (default %(default)s; the last repeats)")
    fed.add_argument("--sc-ids", default="", metavar="ID,ID,...",
                     help="sub-cluster ids (default SC1..SCN); the Router policy's model slots follow their numbers")
    fed.add_argument("--workers-per-subcluster", type=int, default=1, help="workers per sub-cluster (default 1)")
    fed.add_argument("--router-set", action="append", default=[], metavar="KEY=VALUE",
                     help="a Router property, e.g. yarnrl.federation.pad-clusters=5 (repeatable)")
    fed.add_argument("--amrmproxy", action="store_true",
                     help="DSRAP across sub-clusters: every NodeManager runs the AMRMProxy with Hadoop's "
                          "FederationInterceptor and the yarn-rl AMRMProxy policy, which splits each "
                          "ApplicationMaster's asks between its home sub-cluster and the others as the DSRAP engine "
                          "decides (default: off, every job wholly in the sub-cluster the Router chose)")
    fed.add_argument("--amrmproxy-policy", default="sdl", metavar="POLICY",
                     help="the engine policy that splits the asks (default %(default)s); served by the engine "
                          "container when --policy is the same, else by a second one (dsrap)")
    fed.add_argument("--model", help="the engine's model file, under --models-dir")
    fed.add_argument("--models-dir", help="host directory mounted read-only at /models in the engine (default: models/)")
    for opt, default in (("--nn-port", NN_HTTP_PORT), ("--rm-port", RM_HTTP_PORT),
                         ("--metrics-port", ENGINE_METRICS_PORT), ("--grpc-port", ENGINE_GRPC_PORT)):
        up.add_argument(opt, type=int, default=default, help=f"host port on 127.0.0.1 (default {default}; 0 = any)")
    for name, text in (("down", "remove every container and the network"), ("status", "print where it serves")):
        sub.add_parser(name, help=text)
    sh = sub.add_parser("shape", help="limit (or --off: unlimit) the workers' egress of a running cluster")
    g = sh.add_mutually_exclusive_group(required=True)
    g.add_argument("--worker-egress-mbit", type=float, metavar="MBIT", help=egress_help)
    g.add_argument("--off", action="store_true", help="remove the limit")
    th = sub.add_parser("throttle", help="limit (or --off: unlimit) the workers' disk reads of a running cluster "
                                         "(blkio cgroups written from this host; needs root)")
    g = th.add_mutually_exclusive_group(required=True)
    g.add_argument("--worker-disk-read-mbps", type=float, metavar="MBPS",
                   help="MB/s; the DataNodes' drop-behind reads stay as `up` set them (on only with "
                        "up --worker-disk-read-mbps)")
    g.add_argument("--off", action="store_true", help="remove the limit")
    ex = sub.add_parser("exec", help="run a command in the client container (e.g. -- hdfs dfs -ls /)")
    ex.add_argument("--role", default="client", help="container role (client, nn, rm, worker1, engine, ...)")
    ex.add_argument("command", nargs=argparse.REMAINDER)
    for p in sub.choices.values():
        p.add_argument("--name", default="yarnrl", help="cluster name: container and network prefix (default yarnrl)")
        p.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = ap.parse_args(argv)

    def say(msg: str) -> None:
        print(f"[cluster] {msg}", file=sys.stderr, flush=True)

    try:
        if args.cmd == "up" and args.federation:
            from docker_cluster import federation

            spec = federation.FederationSpec(
                name=args.name, subclusters=args.federation, policy=args.policy, policy_settings=args.set,
                engine=not args.no_engine, workers_per_subcluster=args.workers_per_subcluster,
                sc_memory_mb=[int(x) for x in args.sc_memory.split(",") if x.strip()],
                router_settings=args.router_set,
                subcluster_ids=[x.strip() for x in args.sc_ids.split(",") if x.strip()],
                amrmproxy=args.amrmproxy, amrmproxy_policy=args.amrmproxy_policy,
                models_dir=str(Path(args.models_dir or Path(__file__).resolve().parent.parent / "models").resolve()))
            t = time.monotonic()
            fed = federation.Federation(spec)
            if args.model:
                fed.spec.engine = False  # started below with its model, once the rest is up
            fed.up(timeout=args.timeout, progress=say)
            if args.model and not args.no_engine:
                fed.spec.engine = True
                fed.restart_engine(args.policy, model=args.model, settings=args.set)
            s = fed.summary()
            s["boot_seconds"] = round(time.monotonic() - t, 1)
            if args.json:
                print(json.dumps(s))
            else:
                federation.print_summary(s)
        elif args.cmd == "up":
            if args.breaker_open_ms <= 0:
                ap.error("--breaker-open-ms must be positive")
            spec = ClusterSpec(name=args.name, workers=args.workers, policy=args.policy, policy_settings=args.set,
                               engine=not args.no_engine, fault_proxy=args.fault_proxy,
                               breaker_open_ms=args.breaker_open_ms, nn_port=args.nn_port or None,
                               rm_port=args.rm_port or None,
                               metrics_port=args.metrics_port or None, grpc_port=args.grpc_port or None,
                               worker_egress_mbit=args.worker_egress_mbit, nm_vcores=args.nm_vcores,
                               worker_disk_read_mbps=args.worker_disk_read_mbps,
                               worker_disk_device=args.worker_disk_device, dn_cache_mb=args.dn_cache_mb)
            if args.worker_egress_mbit is not None:
                egress_shaping_command(args.worker_egress_mbit)  # a bad rate fails before minutes of booting
            check_disk_read_mbps(args.worker_disk_read_mbps)
            check_dn_cache_mb(args.dn_cache_mb)
            t = time.monotonic()
            cl = Cluster(spec).up(timeout=args.timeout, progress=say)
            s = cl.summary()
            s["boot_seconds"] = round(time.monotonic() - t, 1)
            if not args.json:
                print(f"cluster {args.name!r} is up in {s['boot_seconds']} s: "
                      + ", ".join(f"{h} {r}" for h, r in s["workers"].items()))
                print(f"  NameNode UI         {s['namenode_ui']}")
                print(f"  ResourceManager UI  {s['resourcemanager_ui']}  (RlScheduler counters: /jmx?qry={RM_JMX_BEAN})")
                if spec.engine:
                    print(f"  engine ({spec.policy})  metrics {s['engine_metrics']}, gRPC {s['engine_grpc']}")
                print(f"  client              docker exec -it {spec.container('client')} bash   "
                      f"(hadoop jar {EXAMPLES_JAR} ..., hdfs dfs ...)")
            print(json.dumps(s))
        elif args.cmd == "down":
            removed = Cluster(ClusterSpec(name=args.name)).down()
            if not args.json:
                print(f"removed {len(removed)}: {' '.join(removed)}" if removed else f"no cluster named {args.name!r}")
            print(json.dumps({"removed": removed}))
        elif args.cmd == "status":
            s = Cluster.attach(args.name).summary()
            if not args.json:
                for k, v in s.items():
                    print(f"{k:20s} {v}")
            print(json.dumps(s))
        elif args.cmd == "shape":
            shown = Cluster.attach(args.name).shape_workers(None if args.off else args.worker_egress_mbit)
            if not args.json:
                for h, q in shown.items():
                    print(f"{h:10s} {q}")
            print(json.dumps({"worker_egress_mbit": None if args.off else args.worker_egress_mbit, "qdisc": shown}))
        elif args.cmd == "throttle":
            limits = Cluster.attach(args.name).throttle_disk_reads(None if args.off else args.worker_disk_read_mbps)
            if not args.json:
                for h, lim in limits.items():
                    print(f"{h:10s} {', '.join(f'{d}: {b / MB:g} MB/s' for d, b in lim.items()) or 'unthrottled'}")
            print(json.dumps({"worker_disk_read_mbps": None if args.off else args.worker_disk_read_mbps,
                              "read_bps": limits}))
        elif args.cmd == "exec":
            command = args.command[1:] if args.command[:1] == ["--"] else args.command
            if not command:
                ap.error("exec: give a command, e.g. exec -- hdfs dfs -ls /")
            rc, out = Cluster.attach(args.name).exec(command, role=args.role, check=False)
            sys.stdout.write(out)
            return rc
    except (images.DockerUnavailable, ClusterError, RuntimeError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
