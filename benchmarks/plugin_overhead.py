"""Plugin overhead on a real mini cluster: RlScheduler + engine (FIFO policy) against YARN's native FifoScheduler.

Runs the plugin's Maven benchmark (yarn_plugin/src/test/java/org/yarnrl/yarn/PluginOverheadBenchmarkIT.java):

* the Java client's Schedule decisions/s against a real `policy-engine serve` (one thread, back to back, p50/p99),
* the same HiBench-tiny workload (RandomTextWriter + WordCount, TeraGen + TeraSort) on the same 4-host mini cluster
  (MiniDFSCluster + MiniMRYarnCluster) under the native FifoScheduler and under RlScheduler asking the engine,
  timing every NODE_UPDATE the ResourceManager handles (same wrapper for both) and every job.

Needs Java 17 and Maven (downloads on first run) and `make install`. Prints a summary, then one JSON object as the
last line. Takes about 14 minutes on 2 cores (2 rounds).

    .venv/bin/python benchmarks/plugin_overhead.py [--client-seconds 10] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POM = ROOT / "yarn_plugin" / "pom.xml"
RESULT = ROOT / "yarn_plugin" / "target" / "bench-plugin-overhead" / "result.json"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--client-seconds", type=int, default=10, help="length of the decisions/s run (default 10)")
    p.add_argument("--rounds", type=int, default=2,
                   help="ABBA rounds of the workload per scheduler (native, plugin, plugin, native...; default 2)")
    args = p.parse_args(argv)
    if args.client_seconds <= 0 or args.rounds <= 0:
        p.error("--client-seconds and --rounds must be positive")
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SystemExit("plugin_overhead: Maven (mvn) is not on PATH; it builds and runs the plugin benchmark")
    RESULT.unlink(missing_ok=True)
    cmd = [mvn, "-B", "-q", "-f", str(POM), "verify", "-Dit.test=PluginOverheadBenchmarkIT",
           "-Dyarnrl.benchmark=true", f"-Dyarnrl.bench.client-seconds={args.client_seconds}", f"-Dyarnrl.bench.rounds={args.rounds}",
           f"-Dyarnrl.python={sys.executable}"]
    print("running:", " ".join(cmd), file=sys.stderr, flush=True)
    rc = subprocess.run(cmd, stdout=2).returncode  # Maven's output is progress; stdout ends in the JSON
    if rc != 0 or not RESULT.exists():
        raise SystemExit(f"plugin_overhead: Maven benchmark failed (exit {rc}); see yarn_plugin/target/failsafe-reports")
    result = json.loads(RESULT.read_text())
    nat, plug, client = result["native_fifo"], result["plugin_fifo"], result["client"]
    print(f"Java client -> engine: {client['decisions_per_s']:.0f} decisions/s, p50 {client['p50_ms']:.2f} ms, "
          f"p99 {client['p99_ms']:.2f} ms")
    for name, r in (("native FifoScheduler", nat), ("RlScheduler + engine", plug)):
        per_run = "; ".join(
            ", ".join(f"{k} {v['seconds']:.1f}s" for k, v in run.items() if isinstance(v, dict) and "seconds" in v)
            for run in r["runs"])
        print(f"{name:>21}: node update mean {r['node_update_mean_us']:.0f} us over {r['node_updates']} "
              f"(allocating ones: {r['allocating_node_update_mean_us']:.0f} us over {r['allocating_node_updates']}); "
              f"jobs {r['mean_total_job_seconds']:.1f}s per run ({per_run})")
    print(f"plugin/native over {result['rounds']} ABBA rounds: job time {result['job_time_ratio']:.3f}, node-update "
          f"mean {result['node_update_mean_ratio']:.2f}, allocating node-update mean "
          f"{result['allocating_node_update_mean_ratio']:.2f}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
