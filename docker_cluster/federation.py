#!/usr/bin/env python3
"""A YARN Federation in containers: ZooKeeper, a Router with the learned Router policy, N sub-clusters (each a
ResourceManager with RlCapacityScheduler and its workers), one HDFS, the policy engine and a client.

    python -m docker_cluster up --federation 2 --name fed [--sc-memory 4096,2048] [--policy rl-fc ...]
    python -m docker_cluster down --name fed

Built from the same images as the single cluster (yarnrl/hadoop:3.5.0, yarnrl/engine) plus yarnrl/router:3.4.2
(docker/router: the 3.4.2 Router from Maven Central with the policy's jar), as shared/notes/yarn-federation.md
verified: 3.4.2 Router, 3.5.0 RMs, a ZooKeeper state store (ZooKeeper runs from the jar hadoop-common brings).

| container (hostname) | runs |
|---|---|
| `NAME-zk` (zk) | ZooKeeper 3.8 (the federation state store) |
| `NAME-router` (router) | the Router (clients :8050, web :8089) through org.yarnrl.federation.RouterLauncher |
| `NAME-rmK` (rmK) | sub-cluster SCK's ResourceManager (RlCapacityScheduler, scheduling natively: the engine routes here; ApplicationMasters hold at most half its memory, so a burst of jobs cannot deadlock it) |
| `NAME-scK-workerJ` | a DataNode and SCK's NodeManager |
| `NAME-nn`, `NAME-engine`, `NAME-client` | as in the single cluster; the client submits to router:8050 |

Sub-clusters may differ in size (`--sc-memory`: each sub-cluster's NodeManager memory; RL-LSFC's heterogeneous
clusters). Workers have their RM's host name marked final, so a MapReduce ApplicationMaster, which reads the
client's job.xml over its node's yarn-site, talks to its own sub-cluster's scheduler.

With `--amrmproxy` (FederationSpec.amrmproxy; off by default) every NodeManager runs the AMRMProxy with Hadoop's
FederationInterceptor and the yarn-rl AMRMProxy policy (DSRAP across sub-clusters, org.yarnrl.federation.
RlAMRMProxyPolicy): an ApplicationMaster's scheduler address is its own NodeManager (localhost:8049, from the
client's yarn-site through job.xml), the interceptor splits its asks as the DSRAP engine decides and runs an unmanaged AM in each neighbour sub-cluster that
gets a share. The engine serving the split (`--amrmproxy-policy`, default sdl) is the `engine` container when
`--policy` names the same policy, else a second one:

| `NAME-dsrap` (dsrap) | `policy-engine serve --policy sdl`, asked by every NodeManager's AMRMProxy policy |
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from docker_cluster import images
from docker_cluster.cluster import (
    ENGINE_GRPC_PORT,
    ENGINE_METRICS_PORT,
    NN_HTTP_PORT,
    RM_HTTP_PORT,
    Cluster,
    ClusterError,
    ClusterSpec,
    _http_json,
)

ROUTER_CLIENT_PORT = 8050
# SleepJob (jobs of a chosen run time): in the client, which runs from the router image (docker/router/Dockerfile)
SLEEP_JAR = "/opt/hadoop/share/hadoop/mapreduce/yarnrl-sleep-job.jar"
ROUTER_WEB_PORT = 8089
ZK_PORT = 2181
ROUTER_JMX_BEAN = "Hadoop:service=Router,name=RlRouterPolicy"
ZK_STORE = "org.apache.hadoop.yarn.server.federation.store.impl.ZookeeperFederationStateStore"
FEDERATION_INTERCEPTOR = "org.apache.hadoop.yarn.server.nodemanager.amrmproxy.FederationInterceptor"
AMRMPROXY_PORT = 8049  # yarn.nodemanager.amrmproxy.address's default port
NM_HTTP_PORT = 8042
NM_JMX_BEAN = "Hadoop:service=NodeManager,name=RlAMRMProxyPolicy"


def _prop(name: str, value: str, final: bool = False) -> str:
    return (f"<property><name>{name}</name><value>{value}</value>"
            + ("<final>true</final>" if final else "") + "</property>")


@dataclass
class FederationSpec(ClusterSpec):
    subclusters: int = 2
    workers_per_subcluster: int = 1
    sc_memory_mb: list[int] = field(default_factory=lambda: [4096, 2048])
    router_port: int | None = None  # host port of the Router's web UI (/jmx, /ws/v1/cluster); None = any free
    rm_ports: int | None = None     # RMs' web UIs: always any free port (several of them)
    # extra Router properties "key=value" (e.g. yarnrl.federation.pad-clusters=5, a bad setting in a test)
    router_settings: list[str] = field(default_factory=list)
    router_deadline_ms: int = 50
    max_am_share: float = 0.5       # each RM's CapacityScheduler: the share of memory ApplicationMasters may hold
    router_breaker_open_ms: int = 5000
    models_dir: str | None = None   # mounted read-only at /models in the engine container
    # sub-cluster ids (default SC1..SCN). The Router policy numbers a sub-cluster by its id's trailing number, and
    # a model's cluster shape puts SC<k> in slot k-1: SC5,SC3 give the big and the small sub-cluster the slots of
    # a 5-cluster model's largest and middle clusters.
    subcluster_ids: list[str] = field(default_factory=list)
    # DSRAP across sub-clusters: AMRMProxy (FederationInterceptor + RlAMRMProxyPolicy) in every NodeManager
    amrmproxy: bool = False
    amrmproxy_policy: str = "sdl"       # the engine policy that splits the asks (a DSRAP manager policy)
    amrmproxy_deadline_ms: int = 500    # the NodeManagers' engine deadline (the AM's heartbeat waits on it)
    amrmproxy_breaker_open_ms: int = 3000

    def __post_init__(self):
        if self.subclusters < 2:
            raise ValueError("--federation needs at least 2 sub-clusters")
        if len(self.sc_memory_mb) < self.subclusters:
            self.sc_memory_mb = list(self.sc_memory_mb) + [self.sc_memory_mb[-1]] * (
                self.subclusters - len(self.sc_memory_mb))
        if self.subcluster_ids and (len(self.subcluster_ids) != self.subclusters
                                    or len(set(self.subcluster_ids)) != self.subclusters):
            raise ValueError(f"--sc-ids needs {self.subclusters} distinct ids, got {self.subcluster_ids}")
        self.workers = self.subclusters * self.workers_per_subcluster
        self.racks = self.subclusters
        self.nn_port = self.nn_port if self.nn_port != NN_HTTP_PORT else None
        self.rm_port = None
        self.metrics_port = self.metrics_port if self.metrics_port != ENGINE_METRICS_PORT else None
        self.grpc_port = self.grpc_port if self.grpc_port != ENGINE_GRPC_PORT else None

    @property
    def amrmproxy_shares_engine(self) -> bool:
        """The AMRMProxy policy asks the `engine` container (it serves the same policy), not a `dsrap` one."""
        return self.engine and self.policy == self.amrmproxy_policy

    @property
    def amrmproxy_engine_address(self) -> str:
        return f"{'engine' if self.amrmproxy_shares_engine else 'dsrap'}:{ENGINE_GRPC_PORT}"

    def sc_ids(self) -> list[str]:
        if self.subcluster_ids:
            return list(self.subcluster_ids)
        return [f"SC{k + 1}" for k in range(self.subclusters)]

    def sc_workers(self, k: int) -> list[str]:
        return [f"sc{k + 1}-worker{j + 1}" for j in range(self.workers_per_subcluster)]

    def worker_hosts(self) -> list[str]:
        return [h for k in range(self.subclusters) for h in self.sc_workers(k)]

    def sc_of(self, host: str) -> int:
        return int(host.split("-")[0][2:]) - 1


class Federation(Cluster):
    """Start, inspect and stop one named federation (see the module docstring)."""

    spec: FederationSpec

    def __init__(self, spec: FederationSpec):
        super().__init__(spec)

    # ------------------------------------------------------------------------------------------ addresses
    def _ips(self) -> dict[str, str]:
        p = self.subnet_prefix
        ips = {"nn": f"{p}.10", "engine": f"{p}.12", "client": f"{p}.13", "zk": f"{p}.15", "router": f"{p}.16",
               "dsrap": f"{p}.17"}
        for k in range(self.spec.subclusters):
            ips[f"rm{k + 1}"] = f"{p}.{30 + k}"
        for i, h in enumerate(self.spec.worker_hosts()):
            ips[h] = f"{p}.{50 + i}"
        if self.spec.amrmproxy:  # each sub-cluster id names its RM's host (see _amrmproxy_props)
            for k, sc in enumerate(self.spec.sc_ids()):
                ips[sc] = ips[f"rm{k + 1}"]
        return ips

    def _state_store_props(self) -> list[str]:
        return [
            _prop("yarn.federation.state-store.class", ZK_STORE),
            _prop("hadoop.zk.address", f"zk:{ZK_PORT}"),
            _prop("yarn.federation.state-store.zk.address", f"zk:{ZK_PORT}"),
            _prop("yarn.federation.cache-ttl.secs", "0"),
        ]

    def _amrmproxy_props(self, k: int) -> list[str]:
        """A NodeManager's AMRMProxy with Hadoop's FederationInterceptor and the yarn-rl AMRMProxy policy (see
        yarn_plugin/README.md, "DSRAP across sub-clusters"). Written at `up` into the worker's yarn-site (the
        image's templates are unchanged)."""
        s = self.spec
        return [
            # The interceptor names the AMRM token of each RM it talks to (home, and the unmanaged AMs' in the
            # neighbours) by this address, computed from its own configuration with the cluster id set to that
            # sub-cluster (Hadoop's AMRMClientUtils.createRMProxy); the RPC client picks a token by the address it
            # connects to (the state store's). With the RM's host name here every unmanaged AM's token would name
            # the home RM, and a neighbour's RM refuses it ("Client cannot authenticate via:[TOKEN]"); with the
            # cluster id, resolved as a host name of that sub-cluster's RM (_ips), each token names its own RM.
            # Not final: an ApplicationMaster's job.xml sets localhost:8049 (the client's yarn-site), the AMRMProxy.
            _prop("yarn.resourcemanager.scheduler.address", "${yarn.resourcemanager.cluster-id}:8030"),
            _prop("yarn.nodemanager.amrmproxy.enabled", "true"),
            _prop("yarn.nodemanager.amrmproxy.interceptor-class.pipeline", FEDERATION_INTERCEPTOR),
            _prop("yarn.federation.enabled", "true"),
            _prop("yarn.resourcemanager.cluster-id", s.sc_ids()[k]),  # the interceptor's home sub-cluster
            # the interceptor reaches the home RM and the neighbours' through the state store's addresses
            # (FederationRMFailoverProxyProvider); without this it would use the scheduler address above: itself
            _prop("yarn.federation.non-ha.enabled", "true"),
            # the NodeManager's own RM connection: no RM HA here (with failover on, RMProxy looks for HA ids)
            _prop("yarn.federation.failover.enabled", "false"),
            *self._state_store_props(),
            _prop("yarn.federation.policy-manager", "org.yarnrl.federation.RlPolicyManager"),
            _prop("yarnrl.federation.amrmproxy.enabled", "true"),
            _prop("yarnrl.federation.engine.address", s.amrmproxy_engine_address),
            _prop("yarnrl.federation.engine.deadline-ms", str(s.amrmproxy_deadline_ms)),
            _prop("yarnrl.federation.engine.breaker.failures", "3"),
            _prop("yarnrl.federation.engine.breaker.open-ms", str(s.amrmproxy_breaker_open_ms)),
        ]

    def _env(self, role: str) -> dict[str, str]:
        env = super()._env(role)
        s = self.spec
        env["YARNRL_ENGINE_ADDRESS"] = ""  # the RMs schedule natively: the engine serves the Router's Route
        if role.startswith("rm"):
            k = int(role[2:]) - 1
            env["YARNRL_RM_HOST"] = role
            env["YARNRL_YARN_EXTRA"] = "".join([
                _prop("yarn.federation.enabled", "true"),
                _prop("yarn.resourcemanager.cluster-id", s.sc_ids()[k]),
                _prop("yarn.resourcemanager.epoch", str((k + 1) * 1000)),
                *self._state_store_props(),
                _prop("yarn.federation.state-store.heartbeat-interval-secs", "1"),
                _prop("yarn.federation.state-store.heartbeat.initial-delay", "1s"),
                # FIFO admits every ApplicationMaster: a burst of routed jobs filled SC5 with 8 AMs and SC3 with 4,
                # no memory was left for a single map, and every job waited forever (measured, 40-job stream).
                # CapacityScheduler (the plugin's, natively: no queue opts in) caps AMs at half the memory.
                _prop("yarn.resourcemanager.scheduler.class", "org.yarnrl.yarn.RlCapacityScheduler"),
                _prop("yarn.scheduler.capacity.maximum-am-resource-percent", str(s.max_am_share)),
            ])
        elif role in s.worker_hosts():
            k = s.sc_of(role)
            env["YARNRL_RM_HOST"] = f"rm{k + 1}"
            env["YARNRL_NM_MEMORY_MB"] = str(s.sc_memory_mb[k])
            # an ApplicationMaster reads the client's job.xml over this file: its RM must stay this sub-cluster's
            env["YARNRL_YARN_EXTRA"] = "".join([_prop("yarn.resourcemanager.hostname", f"rm{k + 1}", final=True),
                                                *(self._amrmproxy_props(k) if s.amrmproxy else [])])
        elif role == "client":
            env["YARNRL_RM_HOST"] = "router"
            env["YARNRL_YARN_EXTRA"] = "".join([
                _prop("yarn.resourcemanager.address", f"router:{ROUTER_CLIENT_PORT}"),
                _prop("yarn.federation.enabled", "false"),
                # with AMRMProxy: a job's ApplicationMaster (reading this through job.xml) talks to its NodeManager
                *([_prop("yarn.resourcemanager.scheduler.address", f"localhost:{AMRMPROXY_PORT}")]
                  if s.amrmproxy else []),
            ])
        return env

    def _router_env(self) -> dict[str, str]:
        s = self.spec
        return {
            "YARNRL_ZK": f"zk:{ZK_PORT}",
            "YARNRL_ENGINE_ADDRESS": f"engine:{ENGINE_GRPC_PORT}",
            "YARNRL_ENGINE_DEADLINE_MS": str(s.router_deadline_ms),
            "YARNRL_ENGINE_BREAKER_OPEN_MS": str(s.router_breaker_open_ms),
            "YARNRL_ROUTER_EXTRA": ";".join(s.router_settings),
        }

    # ------------------------------------------------------------------------------------------- lifecycle
    def up(self, timeout: float = 600.0, build: bool = True, progress=None) -> "Federation":
        say = progress or (lambda msg: None)
        s = self.spec
        if build:
            say("checking images (hadoop, engine, router)")
            images.ensure_federation_images()
        if self.containers():
            raise ClusterError(f"a cluster named {s.name!r} already exists: "
                               f"`python -m docker_cluster down --name {s.name}` first")
        self._check_ports()
        t0 = time.monotonic()
        try:
            self._create_network()
            say(f"network {s.network} ({self.subnet_prefix}.0/24)")
            self._start("zk", images.HADOOP_IMAGE,
                        ["-Xmx192m", "-Dzookeeper.admin.enableServer=false", "-cp",
                         "/opt/hadoop/etc/hadoop:/opt/hadoop/share/hadoop/common/lib/*",
                         "org.apache.zookeeper.server.ZooKeeperServerMain", str(ZK_PORT), "/tmp/zk"],
                        {}, env={}, entrypoint=["java"])
            self._start("nn", images.HADOOP_IMAGE, ["namenode"], {NN_HTTP_PORT: s.nn_port})
            self._wait(lambda: "binding to port" in self.logs("zk", 200), 120, "ZooKeeper to listen", ["zk"])
            for k in range(s.subclusters):
                self._start(f"rm{k + 1}", images.HADOOP_IMAGE, ["resourcemanager"], {RM_HTTP_PORT: None})
            for h in s.worker_hosts():
                self._start(h, images.HADOOP_IMAGE, ["worker"], {})
            if s.engine:
                self.start_engine(s.policy, s.policy_settings, wait=False, **self._engine_kwargs())
            if s.amrmproxy and not s.amrmproxy_shares_engine:
                self.start_dsrap_engine(wait=False)
            self._start("router", images.ROUTER_IMAGE, [], {ROUTER_WEB_PORT: s.router_port},
                        env=self._router_env())
            self._start("client", images.ROUTER_IMAGE, ["client"], {}, entrypoint=["/opt/hadoop/bin/yarnrl-daemon"])
            say("containers started; waiting for DataNodes, each sub-cluster's NodeManagers, the Router and the engine")
            self.wait_ready(timeout=max(10.0, timeout - (time.monotonic() - t0)))
        except BaseException:
            self.down(quiet=True)
            raise
        return self

    def _engine_kwargs(self, model: str | None = None) -> dict:
        if not self.spec.models_dir:
            return {}
        return {"volumes": {self.spec.models_dir: ("/models", "ro")}}

    def restart_engine(self, policy: str, model: str | None = None, settings: list[str] | None = None,
                       timeout: float = 120.0) -> None:
        """The engine container again with another policy (`model`: a file name under models_dir)."""
        args = ["--model", f"/models/{model}"] if model else []
        self.start_engine(policy, settings, wait=True, timeout=timeout, args=args, **self._engine_kwargs())

    def start_dsrap_engine(self, wait: bool = True, timeout: float = 120.0) -> None:
        """(Re)start the engine the NodeManagers' AMRMProxy policy asks (`dsrap`, serving amrmproxy_policy)."""
        import docker

        from docker_cluster.cluster import LABEL_POLICY

        try:
            self.client.containers.get(self.spec.container("dsrap")).remove(force=True)
        except docker.errors.NotFound:
            pass
        policy = self.spec.amrmproxy_policy
        self._start("dsrap", images.ENGINE_IMAGE,
                    ["serve", "--host", "0.0.0.0", "--port", str(ENGINE_GRPC_PORT), "--metrics-port",
                     str(ENGINE_METRICS_PORT), "--policy", policy],
                    {ENGINE_GRPC_PORT: None, ENGINE_METRICS_PORT: None}, labels={LABEL_POLICY: policy}, env={})
        if wait:
            self._wait(self._dsrap_serving, timeout, "the DSRAP engine to serve", ["dsrap"])

    @property
    def dsrap_metrics_url(self) -> str:
        """The /metrics of the engine the AMRMProxy policy asks (`engine` when it serves the same policy)."""
        role = "engine" if self.spec.amrmproxy_shares_engine else "dsrap"
        return f"http://127.0.0.1:{self.host_port(role, ENGINE_METRICS_PORT)}/metrics"

    def _dsrap_serving(self) -> bool:
        with urllib.request.urlopen(self.dsrap_metrics_url, timeout=5) as r:  # noqa: S310
            return r.status == 200

    def kill_dsrap_engine(self) -> None:
        self.get("engine" if self.spec.amrmproxy_shares_engine else "dsrap").kill()

    def start_invalid_engine(self, timeout: float = 120.0) -> None:
        """In the engine's place (engine:50051): docker_cluster/invalid_engine.py, whose every Route answer names a cluster
        that is no candidate or a job the request does not have."""
        import docker

        from docker_cluster.cluster import FAULT_SCRIPTS

        try:
            self.client.containers.get(self.spec.container("engine")).remove(force=True)
        except docker.errors.NotFound:
            pass
        script = "/yarnrl-faults/invalid_engine.py"
        self._start("engine", images.ENGINE_IMAGE,
                    ["-c", f"exec python {script} --host 0.0.0.0 --port {ENGINE_GRPC_PORT}"],
                    {ENGINE_GRPC_PORT: None}, env={"PYTHONUNBUFFERED": "1"},
                    volumes={str(FAULT_SCRIPTS / "invalid_engine.py"): (script, "ro")}, entrypoint=["bash"])
        self._wait(lambda: "answering invalid" in self.logs("engine", 20), timeout, "the invalid engine", ["engine"])

    def restart_router(self, settings: list[str], timeout: float = 300.0) -> None:
        """The Router container again with other policy settings ("key=value"): the policy's settings are read
        once, at the Router's first submission, and its counters start from zero."""
        import docker

        try:
            self.client.containers.get(self.spec.container("router")).remove(force=True)
        except docker.errors.NotFound:
            pass
        self.spec.router_settings = list(settings)
        self._start("router", images.ROUTER_IMAGE, [], {ROUTER_WEB_PORT: self.spec.router_port},
                    env=self._router_env())
        self._wait(self.router_sees_all, timeout, "the Router to see every sub-cluster's nodes", ["router", "zk"])

    def _check_ports(self) -> None:
        pass  # every host port is picked by Docker unless given; a taken given port fails at start with its name

    # ---------------------------------------------------------------------------------------- readiness
    def rm_url_of(self, k: int) -> str:
        return f"http://127.0.0.1:{self.host_port(f'rm{k + 1}', RM_HTTP_PORT)}"

    @property
    def rm_url(self) -> str:  # the single cluster's "the RM" is the first sub-cluster's here
        return self.rm_url_of(0)

    @property
    def router_url(self) -> str:
        return f"http://127.0.0.1:{self.host_port('router', ROUTER_WEB_PORT)}"

    def running_nodemanagers_of(self, k: int) -> dict[str, str]:
        nodes = (_http_json(f"{self.rm_url_of(k)}/ws/v1/cluster/nodes").get("nodes") or {}).get("node") or []
        return {n["nodeHostName"]: n["rack"] for n in nodes if n.get("state") == "RUNNING"}

    def running_nodemanagers(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for k in range(self.spec.subclusters):
            out.update(self.running_nodemanagers_of(k))
        return out

    def router_jmx(self) -> dict:
        """The learned policy's counters (RlRouterPolicy bean); {} until the Router built its policy (first call)."""
        beans = _http_json(f"{self.router_url}/jmx?qry={ROUTER_JMX_BEAN}")["beans"]
        return beans[0] if beans else {}

    def active_subclusters(self) -> list[str]:
        """Sub-clusters the Router's REST sees (its aggregated metrics come from every active one)."""
        out = []
        for k in range(self.spec.subclusters):
            try:
                m = _http_json(f"{self.rm_url_of(k)}/ws/v1/cluster/info")["clusterInfo"]
                if m.get("state") == "STARTED":
                    out.append(self.spec.sc_ids()[k])
            except (OSError, ValueError, KeyError):
                pass
        return out

    def router_sees_all(self) -> bool:
        m = _http_json(f"{self.router_url}/ws/v1/cluster/metrics", timeout=10)["clusterMetrics"]
        return int(m.get("activeNodes", 0)) >= self.spec.workers

    def wait_ready(self, timeout: float = 600.0) -> None:
        s = self.spec
        until = time.monotonic() + timeout

        def left() -> float:
            return max(5.0, until - time.monotonic())

        hosts = s.worker_hosts()
        self._wait(lambda: all(h in self.live_datanodes() for h in hosts), left(),
                   f"{len(hosts)} DataNodes to register", ["nn", *hosts])
        for k in range(s.subclusters):
            want = s.sc_workers(k)
            self._wait(lambda k=k, want=want: all(h in self.running_nodemanagers_of(k) for h in want), left(),
                       f"{s.sc_ids()[k]}'s NodeManagers to register", [f"rm{k + 1}", *want])
        self._wait(lambda: _http_json(f"{self.nn_url}/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo")
                   ["beans"][0]["Safemode"] == "", left(), "the NameNode to leave safe mode", ["nn"])
        self._wait(self.router_sees_all, left(), "the Router to see every sub-cluster's nodes", ["router", "zk"])
        if s.engine:
            self._wait(self._engine_serving, left(), "the engine to serve", ["engine"])
        if s.amrmproxy:
            self._wait(self._dsrap_serving, left(), "the DSRAP engine to serve",
                       ["engine" if s.amrmproxy_shares_engine else "dsrap"])

    # ------------------------------------------------------------------------------------------- queries
    def app_subcluster(self, app_id: str) -> str | None:
        """The sub-cluster whose RM runs (or ran) the application, asked of each RM itself: its home, not a
        sub-cluster where the AMRMProxy runs an unmanaged AM for it."""
        for sc, app in self.app_on_subclusters(app_id).items():
            if not app.get("unmanagedApplication"):
                return sc
        return None

    def app_on_subclusters(self, app_id: str) -> dict[str, dict]:
        """The application as each RM that knows it reports it (/ws/v1/cluster/apps/ID): its home sub-cluster, and
        with AMRMProxy the neighbours where an unmanaged AM ran its share (`unmanagedApplication` true)."""
        out = {}
        for k, sc in enumerate(self.spec.sc_ids()):
            try:
                out[sc] = _http_json(f"{self.rm_url_of(k)}/ws/v1/cluster/apps/{app_id}")["app"]
            except urllib.error.HTTPError:
                continue
        return out

    def nm_jmx(self, host: str) -> dict:
        """The AMRMProxy policy's counters on one NodeManager's JMX ({} before its first ApplicationMaster)."""
        rc, out = self.exec(f"curl -sf 'http://localhost:{NM_HTTP_PORT}/jmx?qry={NM_JMX_BEAN}'", role=host,
                            timeout=20, check=False)
        if rc != 0:
            return {}
        beans = json.loads(out).get("beans") or []
        return beans[0] if beans else {}

    def subcluster_metrics(self) -> dict[str, dict]:
        return {sc: _http_json(f"{self.rm_url_of(k)}/ws/v1/cluster/metrics")["clusterMetrics"]
                for k, sc in enumerate(self.spec.sc_ids())}

    def summary(self) -> dict:
        s = self.spec
        out = {"name": s.name, "federation": s.subclusters, "router_ui": self.router_url,
               "router_policy_jmx": f"{self.router_url}/jmx?qry={ROUTER_JMX_BEAN}", "namenode_ui": self.nn_url,
               "subclusters": {}}
        for k, sc in enumerate(s.sc_ids()):
            out["subclusters"][sc] = {"rm_ui": self.rm_url_of(k), "memory_mb_per_worker": s.sc_memory_mb[k],
                                      "workers": s.sc_workers(k)}
        if s.engine:
            out.update(policy=s.policy, engine_metrics=self.metrics_url, engine_grpc=self.engine_target)
        if s.amrmproxy:
            out["amrmproxy"] = {"policy": s.amrmproxy_policy, "engine": s.amrmproxy_engine_address,
                                "engine_metrics": self.dsrap_metrics_url,
                                "nm_policy_jmx": f"docker exec {s.container(s.worker_hosts()[0])} curl -s "
                                                 f"'localhost:{NM_HTTP_PORT}/jmx?qry={NM_JMX_BEAN}'"}
        return out

    @classmethod
    def attach(cls, name: str, **spec_kwargs) -> "Federation":
        """A federation another process started (sub-cluster count and sizes read back from the containers)."""
        probe = Cluster(ClusterSpec(name=name))
        found = probe.containers()
        rms = sorted(c.labels.get("org.yarnrl.role", "") for c in found
                     if c.labels.get("org.yarnrl.role", "").startswith("rm"))
        if not rms:
            raise ClusterError(f"no federation named {name!r} is running: `make federation-up` starts one")
        workers = [c for c in found if "-worker" in c.labels.get("org.yarnrl.role", "")]
        per = max(1, len(workers) // len(rms))
        mem = []
        for k in range(len(rms)):
            c = next(c for c in workers if c.labels["org.yarnrl.role"] == f"sc{k + 1}-worker1")
            env = dict(kv.split("=", 1) for kv in c.attrs["Config"]["Env"] if "=" in kv)
            mem.append(int(env.get("YARNRL_NM_MEMORY_MB", 4096)))
        ids = []
        for k in range(len(rms)):
            c = next(c for c in found if c.labels.get("org.yarnrl.role") == f"rm{k + 1}")
            env = dict(kv.split("=", 1) for kv in c.attrs["Config"]["Env"] if "=" in kv)
            extra = env.get("YARNRL_YARN_EXTRA", "")
            key = "<name>yarn.resourcemanager.cluster-id</name><value>"
            ids.append(extra.split(key, 1)[1].split("<", 1)[0] if key in extra else f"SC{k + 1}")
        fed = cls(FederationSpec(name=name, subclusters=len(rms), workers_per_subcluster=per, sc_memory_mb=mem,
                                 subcluster_ids=ids, **spec_kwargs))
        for c in found:
            if c.labels.get("org.yarnrl.role") == "engine":
                fed.spec.policy = c.labels.get("org.yarnrl.policy", fed.spec.policy)
                for m in c.attrs.get("Mounts") or []:
                    if m.get("Destination") == "/models":
                        fed.spec.models_dir = m.get("Source")
        fed.spec.engine = any(c.labels.get("org.yarnrl.role") == "engine" for c in found)
        w1 = next((c for c in workers if c.labels["org.yarnrl.role"] == "sc1-worker1"), None)
        if w1 is not None:
            env = dict(kv.split("=", 1) for kv in w1.attrs["Config"]["Env"] if "=" in kv)
            extra = env.get("YARNRL_YARN_EXTRA", "")
            fed.spec.amrmproxy = "yarn.nodemanager.amrmproxy.enabled" in extra
            key = "<name>yarnrl.federation.engine.address</name><value>"
            if fed.spec.amrmproxy and key in extra:
                dsrap = next((c for c in found if c.labels.get("org.yarnrl.role") == "dsrap"), None)
                if extra.split(key, 1)[1].startswith("engine:"):
                    fed.spec.amrmproxy_policy = fed.spec.policy
                elif dsrap is not None:
                    fed.spec.amrmproxy_policy = dsrap.labels.get("org.yarnrl.policy", fed.spec.amrmproxy_policy)
        for role, port, attr in (("engine", ENGINE_METRICS_PORT, "metrics_port"),
                                 ("engine", ENGINE_GRPC_PORT, "grpc_port")):
            try:
                setattr(fed.spec, attr, fed.host_port(role, port))
            except ClusterError:
                pass
        fed._load_subnet()
        return fed


def print_summary(s: dict) -> None:
    print(f"federation {s['name']!r} is up in {s.get('boot_seconds', '?')} s")
    print(f"  Router UI           {s['router_ui']}  (policy counters: {s['router_policy_jmx']})")
    for sc, d in s["subclusters"].items():
        print(f"  {sc} RM UI           {d['rm_ui']}  ({len(d['workers'])} worker(s) x {d['memory_mb_per_worker']} MB)")
    print(f"  NameNode UI         {s['namenode_ui']}")
    if "policy" in s:
        print(f"  engine ({s['policy']})  metrics {s['engine_metrics']}, gRPC {s['engine_grpc']}")
    if "amrmproxy" in s:
        a = s["amrmproxy"]
        print(f"  AMRMProxy (DSRAP)   every NodeManager; engine {a['engine']} ({a['policy']}), metrics "
              f"{a['engine_metrics']}")
        print(f"                      policy counters: {a['nm_policy_jmx']}")
    print(f"  client              docker exec -it {s['name']}-client bash   (submits through router:{ROUTER_CLIENT_PORT})")
    print(json.dumps(s))
