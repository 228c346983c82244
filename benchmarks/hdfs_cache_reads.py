"""What a read of a cached replica costs against an uncached one, on the container cluster's throttled disks.

On a running container cluster (docker_cluster/cluster.py, best started with --worker-disk-read-mbps and a DataNode
cache that holds the files, --dn-cache-mb): `--files` files of `--size-mb` MB are written from one worker with
replication 1 (a writer on a DataNode keeps the only replica: every block lives on that worker), half of them are
cached with an HDFS cache directive, the workers' block files are evicted from the page cache once, then each reader
(`--readers`; the holder itself first, a worker of the other rack second) reads every file `--repeats` times over
WebHDFS (the DataNode's own read path, BlockSender, as a map task's read; curl in the reader's container, so no
JVM start is timed). Per read: seconds, MB/s and the bytes the holder's blkio cgroup read from its disk (the kernel's
own counter: a read the page cache served reads nothing). Writes a JSON file; the last stdout line is one JSON object.

    python -m docker_cluster up --name cachebench --worker-disk-read-mbps 2 --dn-cache-mb 64 --no-engine
    .venv/bin/python benchmarks/hdfs_cache_reads.py --docker-name cachebench --size-mb 8 --files 4 --repeats 3
    python -m docker_cluster down --name cachebench
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "hdfs_cache_reads"
MB = 1 << 20
POOL = "yarnrl-cache-reads"


def log(*args) -> None:
    print(*args, file=sys.stderr, flush=True)


def write_files(cl, holder: str, base: str, files: int, size_mb: int) -> list[str]:
    """`files` files of `size_mb` MB, one block each, replication 1, written from `holder` (its replica is local)."""
    size = size_mb * MB
    local = " ".join(f"/tmp/cache-reads-{i}" for i in range(files))
    script = (f"for f in {local}; do head -c {size} /dev/urandom > $f; done && hdfs dfs -rm -r -f -skipTrash {base} "
              f"&& hdfs dfs -mkdir -p {base} && hdfs dfs -D dfs.replication=1 -D dfs.blocksize={max(MB, size)} "
              f"-put {local} {base}/ && rm -f {local}")
    cl.exec(script, role=holder, timeout=600)
    paths = [f"{base}/cache-reads-{i}" for i in range(files)]
    for p in paths:
        hosts = [b["hosts"] for b in cl.block_locations(p)]
        if hosts != [[holder]]:
            raise RuntimeError(f"{p}: blocks on {hosts}, expected one block on {holder} (a writer on a DataNode keeps "
                               f"the only replica)")
    return paths


def cache_files(cl, paths: list[str], timeout_s: float = 300.0) -> None:
    cl.exec(["hdfs", "cacheadmin", "-addPool", POOL], timeout=120, check=False)
    for p in paths:
        cl.exec(["hdfs", "cacheadmin", "-addDirective", "-path", p, "-pool", POOL, "-replication", "1"], timeout=120)
    until = time.monotonic() + timeout_s
    while True:
        missing = [p for p in paths if not all(b.get("cachedHosts") for b in cl.block_locations(p))]
        if not missing:
            return
        if time.monotonic() > until:
            raise RuntimeError(f"not cached after {timeout_s:.0f} s: {missing} (is the DataNode cache, --dn-cache-mb, "
                               f"large enough?)")
        time.sleep(2)


def timed_read(cl, reader: str, path: str, holder: str) -> dict:
    """One WebHDFS read of `path` from `reader`'s container: seconds, bytes, and what `holder` read from its disk."""
    before = cl.disk_read_bytes(holder)
    _, out = cl.exec(f"curl -s -f -L -o /dev/null -w '%{{size_download}} %{{time_total}}' "
                     f"'http://nn:9870/webhdfs/v1{path}?op=OPEN&user.name=root'", role=reader, timeout=600)
    size, seconds = int(out.split()[0]), float(out.split()[1])
    return {"bytes": size, "seconds": seconds, "mb_per_s": size / MB / seconds if seconds > 0 else float("inf"),
            "disk_read_bytes": cl.disk_read_bytes(holder) - before}


def summarize(reads: list[dict]) -> dict:
    rates = [r["mb_per_s"] for r in reads]
    secs = [r["seconds"] for r in reads]
    return {"reads": len(reads), "mb_per_s": {"mean": statistics.fmean(rates), "min": min(rates), "max": max(rates)},
            "seconds": {"mean": statistics.fmean(secs), "min": min(secs), "max": max(secs)},
            "disk_read_mb_per_read": statistics.fmean(r["disk_read_bytes"] for r in reads) / MB}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--docker-name", default="yarnrl", help="the running container cluster (default %(default)s)")
    p.add_argument("--holder", default="worker1", help="the worker that holds every replica (default %(default)s)")
    p.add_argument("--readers", default="worker1,worker3",
                   help="workers that read, comma-separated (default %(default)s: the holder, then the other rack)")
    p.add_argument("--files", type=int, default=4, help="files, half of them cached (default %(default)s)")
    p.add_argument("--size-mb", type=int, default=8, help="MB per file, one block each (default %(default)s)")
    p.add_argument("--repeats", type=int, default=3, help="reads of every file by every reader (default %(default)s)")
    p.add_argument("--out", type=Path, default=RESULTS, help=f"results directory (default {RESULTS})")
    args = p.parse_args(argv)
    if args.files < 2 or args.size_mb < 1 or args.repeats < 1:
        p.error("--files must be at least 2, --size-mb and --repeats positive")

    from docker_cluster import cluster as docker_cluster

    cl = docker_cluster.Cluster.attach(args.docker_name)
    readers = [r.strip() for r in args.readers.split(",") if r.strip()]
    unknown = [h for h in [args.holder, *readers] if h not in cl.spec.worker_hosts()]
    if unknown:
        p.error(f"not workers of {args.docker_name!r}: {unknown} (workers: {cl.spec.worker_hosts()})")
    spec = cl.spec
    limits = cl.worker_disk_read_limits()
    drop_behind = spec.worker_disk_read_mbps is not None and "true" in cl.exec(
        "grep -A0 drop.cache.behind.reads /opt/hadoop/etc/hadoop/hdfs-site.xml", role=args.holder, timeout=30)[1]
    log(f"cluster {spec.name}: disk read limit {limits.get(args.holder) or 'none'} on {args.holder}, DataNode cache "
        f"{spec.dn_cache_mb} MB, drop-behind reads {'on' if drop_behind else 'off'}")
    base = "/bench/cache-reads"
    t0 = time.monotonic()
    paths = write_files(cl, args.holder, base, args.files, args.size_mb)
    cached = paths[: args.files // 2]
    try:
        cache_files(cl, cached)
        cl.drop_block_page_cache()
        reads: list[dict] = []
        for rep in range(args.repeats):
            for reader in readers:
                # alternate the order, so neither kind always reads first
                order = paths if rep % 2 == 0 else paths[::-1]
                for path in order:
                    if not drop_behind:  # without the DataNodes' drop-behind the last read stays in the page cache
                        cl.drop_block_page_cache()
                    r = timed_read(cl, reader, path, args.holder)
                    r.update(reader=reader, path=path, cached=path in cached, repeat=rep)
                    reads.append(r)
                    log(f"{reader} reads {'cached  ' if r['cached'] else 'uncached'} {path}: {r['seconds']:.2f} s, "
                        f"{r['mb_per_s']:.1f} MB/s, {r['disk_read_bytes'] / MB:.1f} MB from {args.holder}'s disk")
    finally:
        cl.exec(["hdfs", "cacheadmin", "-removePool", POOL], timeout=120, check=False)
        cl.exec(["hdfs", "dfs", "-rm", "-r", "-f", "-skipTrash", base], timeout=120, check=False)
    table = {}
    for reader in readers:
        kind = "local" if reader == args.holder else "remote"
        table[f"{kind}_cached"] = summarize([r for r in reads if r["reader"] == reader and r["cached"]])
        table[f"{kind}_uncached"] = summarize([r for r in reads if r["reader"] == reader and not r["cached"]])
    for kind in ("local", "remote"):
        if f"{kind}_cached" in table:
            c, u = table[f"{kind}_cached"], table[f"{kind}_uncached"]
            table[f"{kind}_speedup"] = u["seconds"]["mean"] / c["seconds"]["mean"]
            log(f"{kind:6s} cached {c['mb_per_s']['mean']:7.1f} MB/s ({c['seconds']['mean']:.2f} s)   uncached "
                f"{u['mb_per_s']['mean']:7.1f} MB/s ({u['seconds']['mean']:.2f} s)   x{table[f'{kind}_speedup']:.1f}")
    doc = {"cluster": spec.name, "holder": args.holder, "readers": readers, "files": args.files,
           "size_mb": args.size_mb, "repeats": args.repeats, "worker_disk_read_mbps": spec.worker_disk_read_mbps,
           "worker_disk_read_limits": limits, "dn_cache_mb": spec.dn_cache_mb, "drop_behind_reads": drop_behind,
           "worker_egress_mbit": spec.worker_egress_mbit, "summary": table, "reads": reads,
           "seconds": time.monotonic() - t0}
    args.out.mkdir(parents=True, exist_ok=True)
    rate = f"disk{spec.worker_disk_read_mbps:g}mbps" if spec.worker_disk_read_mbps else "unthrottled"
    out = args.out / f"hdfs_cache_reads-{rate}-{args.size_mb}mb.json"
    out.write_text(json.dumps(doc, indent=1))
    log(f"wrote {out}")
    print(json.dumps({k: doc[k] for k in ("worker_disk_read_mbps", "dn_cache_mb", "drop_behind_reads", "size_mb",
                                          "summary")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
