#!/usr/bin/env python3
"""Build the cluster images from Debian packages, Maven Central and PyPI only (no registry, no `docker pull`).

    yarnrl/base:bookworm   debootstrap --variant=minbase + docker import
    yarnrl/hadoop:3.5.0    JRE 17, Hadoop 3.5.0 daemon jars (docker/hadoop/pom.xml), configs, the plugin jar
    yarnrl/engine:latest   Python 3.11, the serving dependencies (no torch) and yarn-rl itself
    yarnrl/router:3.4.2    (only with --only router, or `make federation-up`) the YARN Federation Router 3.4.2 on
                           yarnrl/hadoop, with the learned Router policy's jar

Every image carries the label org.yarnrl.inputs = sha256 of everything it is built from (its recipe files, the
sources it packages, the hash of its base image). An image whose label matches is not rebuilt, so a second
`make images` only hashes files; a changed input rebuilds that image and the ones built on it (Docker's layer
cache then reuses the unchanged layers, e.g. the JRE and the Hadoop jars when only the plugin changed).

    python -m docker_cluster.images [--force] [--only hadoop,engine] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCKER_DIR = REPO / "docker"
# debootstrap's root file system (device nodes, root-owned files): kept out of the checkout
ROOTFS_CACHE = Path(os.environ.get("YARNRL_ROOTFS_CACHE", "/var/tmp/yarnrl-rootfs"))
LABEL = "org.yarnrl.inputs"
SUITE = "bookworm"
MIRROR = os.environ.get("YARNRL_DEBIAN_MIRROR", "http://deb.debian.org/debian")

BASE_IMAGE = f"yarnrl/base:{SUITE}"
HADOOP_IMAGE = "yarnrl/hadoop:3.5.0"
ENGINE_IMAGE = "yarnrl/engine:latest"
ROUTER_IMAGE = "yarnrl/router:3.4.2"
# the build host's own certificate authorities (Debian's place for them), copied into images that fetch over TLS
EXTRA_CA_DIR = Path(os.environ.get("YARNRL_EXTRA_CA_DIR", "/usr/local/share/ca-certificates"))
PLUGIN_JAR = REPO / "yarn_plugin" / "target" / "yarnrl-yarn-plugin-0.1.0.jar"
ROUTER_JAR = REPO / "yarn_plugin" / "target" / "yarnrl-yarn-plugin-0.1.0-router.jar"  # the plugin build's `router` jar

NO_ENGINE = (
    "no Docker engine answers at {where} ({error}). Start one: as root, `apt-get install -y docker.io` then "
    "`nohup dockerd --iptables=false > /tmp/dockerd.log 2>&1 &` (see docker/README.md)"
)


class DockerUnavailable(RuntimeError):
    """No Docker engine answers; the message says how to start one."""


def connect():
    """A docker SDK client for the local engine, or DockerUnavailable with one line on how to start one."""
    import docker

    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=600)
        client.ping()
        return client
    except Exception as e:  # the SDK raises DockerException, requests' ConnectionError, FileNotFoundError, ...
        reason = str(e).splitlines()[0][:160] if str(e) else type(e).__name__
        raise DockerUnavailable(NO_ENGINE.format(where=where, error=reason)) from None


def _files(*roots: Path, exclude: tuple[str, ...] = ()) -> list[Path]:
    out: list[Path] = []
    for root in roots:
        if root.is_file():
            out.append(root)
            continue
        for p in sorted(root.rglob("*")):
            rel = p.relative_to(REPO).as_posix()
            if p.is_file() and "__pycache__" not in p.parts and not any(x in rel for x in exclude):
                out.append(p)
    return out


def content_hash(files: list[Path], *extra: str) -> str:
    h = hashlib.sha256()
    for s in extra:
        h.update(s.encode() + b"\0")
    for p in sorted(files):
        h.update(p.relative_to(REPO).as_posix().encode() + b"\0")
        h.update(p.read_bytes())
        h.update(b"\0" + (b"x" if os.access(p, os.X_OK) else b"-"))
    return h.hexdigest()


@dataclass
class Result:
    image: str
    hash: str
    cached: bool
    seconds: float
    steps: list[str] = field(default_factory=list)


def image_hash_of(client, name: str) -> str | None:
    import docker

    try:
        labels = client.images.get(name).labels or {}
    except docker.errors.ImageNotFound:
        return None
    return labels.get(LABEL)


def _run(cmd: list[str], what: str, cwd: Path | None = None, log: list[str] | None = None) -> None:
    t = time.monotonic()
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        tail = "\n".join(p.stdout.splitlines()[-30:])
        raise RuntimeError(f"{what} failed ({p.returncode}): {' '.join(cmd)}\n{tail}")
    if log is not None:
        log.append(f"{what}: {time.monotonic() - t:.1f} s")


def _say(msg: str) -> None:
    print(f"[images] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------------- base image
BASE_RECIPE = f"debootstrap --variant=minbase {SUITE} {MIRROR}"
APT_CONF = 'APT::Install-Recommends "false";\nAcquire::Retries "3";\n'


def build_base(client, force: bool) -> Result:
    h = hashlib.sha256((BASE_RECIPE + APT_CONF).encode()).hexdigest()
    t = time.monotonic()
    if not force and image_hash_of(client, BASE_IMAGE) == h:
        return Result(BASE_IMAGE, h, True, time.monotonic() - t)
    steps: list[str] = []
    marker = ROOTFS_CACHE / ".yarnrl-recipe"
    rootfs = ROOTFS_CACHE / "rootfs"
    if force or not marker.exists() or marker.read_text() != BASE_RECIPE:
        if shutil.which("debootstrap") is None:
            raise RuntimeError("debootstrap is not installed: as root, `apt-get install -y debootstrap`")
        if os.geteuid() != 0:
            raise RuntimeError("building the base image runs debootstrap, which needs root")
        shutil.rmtree(ROOTFS_CACHE, ignore_errors=True)
        ROOTFS_CACHE.mkdir(parents=True)
        _say(f"debootstrap {SUITE} into {rootfs} (about a minute)")
        _run(["debootstrap", "--variant=minbase", SUITE, str(rootfs), MIRROR], "debootstrap", log=steps)
        # keep apt lean inside the images
        (rootfs / "etc/apt/apt.conf.d/90yarnrl").write_text(APT_CONF)
        marker.write_text(BASE_RECIPE)
    _say(f"docker import -> {BASE_IMAGE}")
    t_imp = time.monotonic()
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    try:
        client.api.import_image(src=tar.stdout, repository=BASE_IMAGE.split(":")[0], tag=SUITE, stream_src=True,
                                changes=[f"LABEL {LABEL}={h}", 'CMD ["/bin/bash"]'])
    finally:
        tar.stdout.close()
        tar.wait()
    steps.append(f"docker import: {time.monotonic() - t_imp:.1f} s")
    return Result(BASE_IMAGE, h, False, time.monotonic() - t, steps)


# ----------------------------------------------------------------------------------------- Dockerfile images
def _docker_build(client, context: Path, tag: str, h: str, base_hash: str, steps: list[str],
                  base_image: str = BASE_IMAGE) -> None:
    import docker

    t = time.monotonic()
    lines: list[str] = []
    try:
        for chunk in client.api.build(path=str(context), tag=tag, buildargs={"BASE": base_image},
                                      labels={LABEL: h, f"{LABEL}.base": base_hash}, network_mode="host",
                                      rm=True, forcerm=True, decode=True):
            if "stream" in chunk:
                line = chunk["stream"].rstrip()
                if line:
                    lines.append(line)
                    if line.startswith("Step "):
                        _say(f"{tag}: {line}")
            if "error" in chunk:
                tail = "\n".join(lines[-25:])
                raise RuntimeError(f"docker build of {tag} failed: {chunk['error'].strip()}\n{tail}")
    except docker.errors.APIError as e:
        raise RuntimeError(f"docker build of {tag} failed: {e}") from None
    steps.append(f"docker build: {time.monotonic() - t:.1f} s")


def hadoop_inputs() -> list[Path]:
    d = DOCKER_DIR / "hadoop"
    return _files(d / "Dockerfile", d / ".dockerignore", d / "pom.xml", d / "src", d / "conf", d / "bin",
                  REPO / "yarn_plugin" / "pom.xml", REPO / "yarn_plugin" / "src" / "main", REPO / "proto")


def _context_with_plugin(ctx: Path, what: str, jar: Path, steps: list[str]) -> None:
    """Fill a build context: the Hadoop jars its pom.xml resolves (ctx/target), and the plugin's `jar` (built by
    `make plugin` first when missing or older than the plugin's sources) in ctx/target/plugin."""
    mvn = os.environ.get("MVN", "mvn")
    _say(f"resolving {what} with Maven (docker/{ctx.name}/pom.xml)")
    _run([mvn, "-B", "-q", "-f", str(ctx / "pom.xml"), "package"], f"maven: {ctx.name} jars", log=steps)
    plugin_sources = _files(REPO / "yarn_plugin" / "pom.xml", REPO / "yarn_plugin" / "src" / "main", REPO / "proto")
    if not jar.exists() or jar.stat().st_mtime < max(p.stat().st_mtime for p in plugin_sources):
        _say("building the plugin's jars (make plugin)")
        _run([mvn, "-B", "-q", "-f", str(REPO / "yarn_plugin" / "pom.xml"), "package", "-DskipTests"],
             "maven: plugin jars", log=steps)
    plugin_dir = ctx / "target" / "plugin"
    shutil.rmtree(plugin_dir, ignore_errors=True)
    plugin_dir.mkdir(parents=True)
    shutil.copy2(jar, plugin_dir / jar.name)


def build_hadoop(client, base_hash: str, force: bool) -> Result:
    h = content_hash(hadoop_inputs(), base_hash)
    t = time.monotonic()
    if not force and image_hash_of(client, HADOOP_IMAGE) == h:
        return Result(HADOOP_IMAGE, h, True, time.monotonic() - t)
    steps: list[str] = []
    ctx = DOCKER_DIR / "hadoop"
    _context_with_plugin(ctx, "the Hadoop 3.5.0 jars", PLUGIN_JAR, steps)
    _say(f"docker build {HADOOP_IMAGE}")
    _docker_build(client, ctx, HADOOP_IMAGE, h, base_hash, steps)
    return Result(HADOOP_IMAGE, h, False, time.monotonic() - t, steps)


def extra_cas() -> list[Path]:
    return sorted(EXTRA_CA_DIR.glob("*.crt")) if EXTRA_CA_DIR.is_dir() else []


def engine_inputs() -> list[Path]:
    d = DOCKER_DIR / "engine"
    return _files(d / "Dockerfile", d / "requirements.txt", REPO / "pyproject.toml", REPO / "policy_engine",
                  REPO / "algorithms")


def build_engine(client, base_hash: str, force: bool) -> Result:
    h = content_hash(engine_inputs(), base_hash, *(p.read_text() for p in extra_cas()))
    t = time.monotonic()
    if not force and image_hash_of(client, ENGINE_IMAGE) == h:
        return Result(ENGINE_IMAGE, h, True, time.monotonic() - t)
    steps: list[str] = []
    ctx = DOCKER_DIR / "engine"
    src = ctx / "src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir()
    # policy_engine/_generated (committed) goes in with the package: the image needs no protoc
    shutil.copy2(REPO / "pyproject.toml", src / "pyproject.toml")
    # pyproject's readme: a stand-in, so that editing the front page does not rebuild the image
    (src / "README.md").write_text("yarn-rl's policy engine, installed in the yarnrl/engine image.\n")
    shutil.copytree(REPO / "policy_engine", src / "policy_engine", ignore=shutil.ignore_patterns("__pycache__"))
    # the served policies of each paper (algorithms/<family>/policy.py; the emulator's parts are never imported)
    shutil.copytree(REPO / "algorithms", src / "algorithms", ignore=shutil.ignore_patterns("__pycache__"))
    certs = ctx / "certs"
    shutil.rmtree(certs, ignore_errors=True)
    certs.mkdir()
    (certs / "README").write_text("filled by docker_cluster/images.py from " + str(EXTRA_CA_DIR) + "\n")
    for p in extra_cas():
        shutil.copy2(p, certs / p.name)
    _say(f"docker build {ENGINE_IMAGE}")
    _docker_build(client, ctx, ENGINE_IMAGE, h, base_hash, steps)
    return Result(ENGINE_IMAGE, h, False, time.monotonic() - t, steps)


def router_inputs() -> list[Path]:
    d = DOCKER_DIR / "router"
    return _files(d / "Dockerfile", d / "pom.xml", d / "router-daemon", d / "log4j.properties",
                  REPO / "yarn_plugin" / "pom.xml", REPO / "yarn_plugin" / "src" / "main", REPO / "proto")


def build_router(client, hadoop_hash: str, force: bool) -> Result:
    """yarnrl/router on yarnrl/hadoop: the 3.4.2 Router's jars (docker/router/pom.xml) and the policy's jar."""
    h = content_hash(router_inputs(), hadoop_hash)
    t = time.monotonic()
    if not force and image_hash_of(client, ROUTER_IMAGE) == h:
        return Result(ROUTER_IMAGE, h, True, time.monotonic() - t)
    steps: list[str] = []
    ctx = DOCKER_DIR / "router"
    _context_with_plugin(ctx, "the Router 3.4.2 jars", ROUTER_JAR, steps)
    _sleep_job_jar(ctx / "target" / "sleep")
    _say(f"docker build {ROUTER_IMAGE}")
    _docker_build(client, ctx, ROUTER_IMAGE, h, hadoop_hash, steps, base_image=HADOOP_IMAGE)
    return Result(ROUTER_IMAGE, h, False, time.monotonic() - t, steps)


def _sleep_job_jar(d: Path) -> Path:
    """yarnrl-sleep-job.jar: SleepJob's classes from the jobclient tests jar, with SleepJob as its Main-Class."""
    import zipfile

    out = d / "yarnrl-sleep-job.jar"
    with zipfile.ZipFile(d / "hadoop-mapreduce-client-jobclient-tests.jar") as src, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        dst.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nMain-Class: org.apache.hadoop.mapreduce.SleepJob\n")
        for name in src.namelist():
            if name.startswith("org/apache/hadoop/mapreduce/SleepJob"):
                dst.writestr(name, src.read(name))
    return out


def ensure_federation_images() -> list[Result]:
    """The cluster's images and the Router's (what `docker_cluster/cluster.py up --federation N` calls)."""
    return build_all(only={"hadoop", "engine", "router"})


def build_all(force: bool = False, only: set[str] | None = None) -> list[Result]:
    client = connect()
    results = [build_base(client, force and (only is None or "base" in only))]
    base_hash = results[0].hash
    if only is None or "hadoop" in only or "router" in only:
        results.append(build_hadoop(client, base_hash, force))
    if only is None or "engine" in only:
        results.append(build_engine(client, base_hash, force))
    if only is not None and "router" in only:  # on the hadoop image built (or found current) above
        results.append(build_router(client, results[1].hash, force))
    return results


def ensure_images() -> list[Result]:
    """Build whatever is missing or stale (what the cluster and its tests call before starting containers)."""
    return build_all()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--force", action="store_true", help="rebuild even when the content hash matches")
    ap.add_argument("--only", help="comma-separated subset of base,hadoop,engine,router (base is always checked; router "
                    "also checks hadoop, its base)")
    ap.add_argument("--json", action="store_true", help="print only the JSON summary")
    args = ap.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    if only and not only <= {"base", "hadoop", "engine", "router"}:
        ap.error(f"--only: unknown image(s) {sorted(only - {'base', 'hadoop', 'engine', 'router'})}")
    t = time.monotonic()
    try:
        results = build_all(args.force, only)
    except (DockerUnavailable, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if not args.json:
        for r in results:
            state = "cached" if r.cached else "built"
            detail = f" ({'; '.join(r.steps)})" if r.steps else ""
            print(f"{r.image:24s} {state:6s} {r.seconds:6.1f} s  inputs {r.hash[:12]}{detail}")
    print(json.dumps({"images": [{"image": r.image, "cached": r.cached, "seconds": round(r.seconds, 1),
                                  "inputs_sha256": r.hash, "steps": r.steps} for r in results],
                      "seconds": round(time.monotonic() - t, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
