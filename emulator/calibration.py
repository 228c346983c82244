"""`emulator calibrate`: fit the node-heartbeat emulator's time model (emulator/yarn/timing.py) to real runs.

Input: the results JSON of benchmarks/real_locality.py (per policy and run: MapReduce's locality counters, job times
and makespan from the ResourceManager, the input's blocks per node, the cluster's shape), optionally with the
engine's decision log of those runs (checked against the results: the same policies, the same number of engine
decisions).

Fit: every (results file, experiment, policy) becomes a locality scenario shaped like the real cluster (4 nodes in
2 racks, the input's real per-map size, its measured blocks per node, the shaped worker egress, 500 ms heartbeats,
512 MB containers, 1 reducer) run with the same policy; the fitted constants s_am, s_task, s_commit, g (CPU factor)
and k (link efficiency; only on a shaped cluster) minimise, by bounded non-linear least squares (damped
Gauss-Newton with wide secant slopes, see `fit`) on their logarithms,

    sum over (experiment, policy) of  n_runs * [ log(T_job^emu / T_job^real)^2 + log(makespan^emu / makespan^real)^2 ]

with the emulator's means over `episodes` fixed episode seeds (common random numbers: the objective is
deterministic). The calibration file records the source files and their checksums, the cluster shape, the fitted
model, per-point residuals (relative error of the emulator's mean job time and makespan) and the code version.

Refused, with one line naming the mismatch: fewer than MIN_RUNS policy runs; runs of different cluster shapes (node
count, racks, heartbeat, shaped egress, replication, container size); a decision log whose policies or decision
counts do not match the results; a calibration file of another time-model version. A file written by another code
version is used with a warning.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from emulator.yarn.hdfs import MB
from emulator.yarn.timing import TIME_MODEL_VERSION, TimeModel
from emulator.yarn.cluster import BLOCK_MB_CHOICES

FORMAT = "yarnrl-calibration"
MIN_RUNS = 6              # policy runs (one policy's jobs on the cluster once) a calibration needs at least
DEFAULT_EPISODES = 3      # emulator episodes per (experiment, policy) prediction
EPISODE_SEED0 = 7_000     # the fit's fixed episode seeds: EPISODE_SEED0 + i
ROOT = Path(__file__).resolve().parent.parent
PRIOR_WEIGHT = 0.05       # weight of the log-parameters' pull towards FIT's start values
FD_STEP = 0.25            # secant step of the fit's slopes, in log-parameter (about 28 %)

# Fitted constants: name -> (start, lower, upper bound). k only when the cluster's links are shaped.
# job_overhead_s = s_am + s_commit: job-level times (job time, makespan) see only their sum (both shift a job's
# whole run), so the sum is fitted and split by AM_SHARE; telling them apart needs task-level times.
FIT = {"job_overhead_s": (8.0, 0.2, 600.0), "task_startup_s": (3.0, 0.1, 120.0),
       "cpu_factor": (3.0, 0.05, 500.0), "link_efficiency": (0.8, 0.02, 3.0)}
AM_SHARE = 0.5            # s_am = AM_SHARE * job_overhead_s, s_commit = the rest


class CalibrationError(ValueError):
    """Input a calibration cannot come from (too few runs, mixed shapes, a mismatching log) or be used with."""


@dataclass
class Point:
    """One policy's runs of one experiment of one results file: what the emulator must reproduce."""

    source: str
    experiment: str
    policy: str
    app: str
    params: dict            # the locality scenario's parameters (shape, workload, layout)
    job_time_s: list        # per run (mean over the run's concurrent jobs)
    makespan_s: list
    local_task_rate: list
    load: list
    clqlmrs_model: str | None = None
    seed: int = 0
    phases: list = field(default_factory=list)  # per run: the jobs' mean phases (emulator.jobhistory), if recorded

    @property
    def key(self) -> str:
        return f"{Path(self.source).name}#{self.experiment}#{self.policy}"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def shape_of(doc: dict, exp: dict) -> dict:
    """The cluster shape a results file's experiment ran on (what a calibration is valid for)."""
    params = exp.get("emulator_params", {})
    return {"cluster": doc.get("cluster"), "nodes": len(doc.get("node_racks", {})) or params.get("nodes"),
            "racks": len(set(doc.get("node_racks", {}).values())) or params.get("racks"),
            "node_memory_mb": params.get("node_memory_mb"), "heartbeat_ms": params.get("heartbeat_ms"),
            "map_memory_mb": params.get("map_memory_mb"), "replication": exp.get("replication", doc.get("replication")),
            "worker_egress_mbit": exp.get("worker_egress_mbit", doc.get("worker_egress_mbit")),
            "worker_disk_read_mbps": doc.get("worker_disk_read_mbps") or None}


def _layout(doc: dict, exp: dict, nodes: int, racks: int) -> tuple[int, ...] | None:
    """blocks_per_node of the real workers in the emulator's host order (dn1, dn2, ...: host i in rack i % racks):
    the workers of each rack, by name, onto the emulator's hosts of that rack."""
    per_node = exp.get("blocks_per_node")
    node_racks = doc.get("node_racks")
    if not per_node or not node_racks or exp.get("replication", 2) != 1:
        return None  # only a replication-1 layout is fully described by counts per node
    rack_names = sorted(set(node_racks.values()))
    if len(rack_names) != racks:
        return None
    by_rack = {r: sorted(w for w, rr in node_racks.items() if rr == r) for r in rack_names}
    out = [0] * nodes
    for r, rack in enumerate(rack_names):
        hosts = [i for i in range(nodes) if i % racks == r]
        for worker, host in zip(by_rack[rack], hosts):
            out[host] = int(per_node.get(worker, 0))
    return tuple(out)


def load_points(paths: list[str | Path], max_load: float | None = None) -> tuple[list[Point], dict, list[dict]]:
    """The points of some results files, their one cluster shape, and the sources (path, sha256)."""
    points: list[Point] = []
    shapes: dict[str, dict] = {}
    sources = []
    for path in map(Path, paths):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise CalibrationError(f"cannot read results {path}: {e}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("experiments"), dict):
            raise CalibrationError(f"{path} is not a real_locality results file (no 'experiments')")
        sources.append({"path": _rel(path), "sha256": _sha256(path)})
        for key, exp in doc["experiments"].items():
            shape = shape_of(doc, exp)
            shapes[f"{path.name}#{key}"] = shape
            files = exp.get("files") or doc.get("maps")
            per_map = exp.get("input_bytes", 0) / max(files or 1, 1)
            block_mb = int(round(per_map / MB))
            if block_mb not in BLOCK_MB_CHOICES or abs(per_map - block_mb * MB) > 0.05 * per_map:
                raise CalibrationError(f"{path.name}#{key}: {per_map / MB:.3g} MB per map; the calibrated emulator "
                                       f"models per-map inputs of {', '.join(map(str, BLOCK_MB_CHOICES[:5]))}... MB")
            params = dict(exp["emulator_params"])
            params["block_mb"] = block_mb
            params["cache_gb"] = exp.get("cached_files", 0) * block_mb / 1024
            params.pop("remote_read_mb_s", None)
            if shape["worker_egress_mbit"]:
                params["remote_read_mb_s"] = float(shape["worker_egress_mbit"]) * 1e6 / 8 / MB
            params.pop("disk_read_mb_s", None)
            if shape["worker_disk_read_mbps"]:   # docker's --device-read-bps Nmb: N MiB/s
                params["disk_read_mb_s"] = float(shape["worker_disk_read_mbps"]) * 1024 * 1024 / MB
            layout = _layout(doc, exp, params["nodes"], params["racks"])
            if layout is not None and sum(layout) == params["maps"]:
                params["layout"] = ",".join(map(str, layout))
            app = key.split("-")[0]
            for policy, pol in exp["policies"].items():
                runs = [r for r in pol.get("per_run", []) if r.get("succeeded", True)]
                if max_load is not None:
                    runs = [r for r in runs if r.get("load_average", 0) <= max_load]
                if not runs:
                    continue
                model = doc.get("clqlmrs_model") if policy == "clqlmrs" else None
                if model:
                    model = str(_resolve(model))
                points.append(Point(str(path), key, policy, app, params, [r["job_time_s"] for r in runs],
                                    [r["makespan_s"] for r in runs], [r["local_task_rate"] for r in runs],
                                    [r.get("load_average") for r in runs], model, int(doc.get("seed", 0)),
                                    [r["phases"] for r in runs if r.get("phases")]))
    distinct = {json.dumps(s, sort_keys=True) for s in shapes.values()}
    if len(distinct) > 1:
        items = list(shapes.items())
        first_key, first = items[0]
        other_key, other = next((k, s) for k, s in items if s != first)
        diff = ", ".join(f"{k} {first.get(k)} vs {other.get(k)}" for k in first if first.get(k) != other.get(k))
        raise CalibrationError(f"runs of another cluster shape: {first_key} and {other_key} differ in {diff}")
    runs = sum(len(p.job_time_s) for p in points)
    if runs < MIN_RUNS:
        raise CalibrationError(f"too few runs: {runs} policy runs in {', '.join(Path(p).name for p in paths)}; "
                               f"a calibration needs at least {MIN_RUNS}")
    return points, next(iter(shapes.values())), sources


def _resolve(model: str) -> Path:
    p = Path(model)
    if p.exists():
        return p
    for base in (ROOT, Path.cwd()):
        # results written by another checkout name its absolute path: keep the part under the repository
        parts = p.parts
        if "models" in parts:
            q = base.joinpath(*parts[parts.index("models"):])
            if q.exists():
                return q
        if (base / p).exists():
            return base / p
    return p


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def check_decision_log(log_dir: str | Path, points: list[Point], docs: list[str | Path]) -> dict:
    """The decision log must be of these runs: the same policies, and per policy as many Schedule decisions as the
    plugin counted (engine_decisions) within 5 %."""
    from policy_engine.decision_log import DecisionLogError, read_decisions

    try:
        table = read_decisions(log_dir)
    except (DecisionLogError, OSError) as e:
        raise CalibrationError(f"cannot read decision log {log_dir}: {e}") from None
    logged: dict[str, int] = {}
    for policy, rpc in zip(table.column("policy").to_pylist(), table.column("rpc").to_pylist()):
        if rpc == "schedule":
            logged[policy] = logged.get(policy, 0) + 1
    counted: dict[str, int] = {}
    for path in docs:
        doc = json.loads(Path(path).read_text())
        for exp in doc["experiments"].values():
            for policy, pol in exp["policies"].items():
                counted[policy] = counted.get(policy, 0) + int(pol.get("plugin", {}).get("engine_decisions", 0))
    extra = sorted(set(logged) - set(counted))
    if extra:
        raise CalibrationError(f"decision log {log_dir} does not match the results: it has decisions of "
                               f"{', '.join(extra)}, which the results do not run")
    for policy, n in counted.items():
        got = logged.get(policy, 0)
        if abs(got - n) > max(2, 0.05 * n):
            raise CalibrationError(f"decision log {log_dir} does not match the results: {got} {policy} decisions "
                                   f"logged, the plugin counted {n}")
    return {"path": str(log_dir), "decisions": logged}


# ---------------------------------------------------------------------------------------------- prediction


def _policy(name: str, model: str | None, seed: int):
    from policy_engine.policy import create

    if name == "clqlmrs":
        kwargs: dict[str, Any] = {"learn": False, "seed": seed}
        if model:
            kwargs["model"] = model
        return create(name, **kwargs)
    return create(name)


def predict(point: Point, times: TimeModel, episodes: int = DEFAULT_EPISODES, seed0: int = EPISODE_SEED0,
            policy_factory: Callable | None = None) -> dict[str, float]:
    """The emulator's mean job time, makespan and local-task rate for `point`'s policy on its cluster shape."""
    from emulator.drivers import InProcessDriver
    from emulator.scenario import get_scenario

    scenario = get_scenario(f"locality-{point.app}", **point.params, times=times)
    out: dict[str, list[float]] = {}
    for ep in range(episodes):
        policy = (policy_factory or _policy)(point.policy, point.clqlmrs_model, point.seed)
        m = scenario.run_episode(InProcessDriver(policy), seed=seed0 + ep)
        for k in ("job_time_s", "makespan_s", "local_task_rate", "map_time_s"):
            out.setdefault(k, []).append(m[k])
    return {k: float(np.mean(v)) for k, v in out.items()}


def measured_overheads(points: list[Point]) -> dict | None:
    """s_am and s_commit measured, not fitted, when every point's runs recorded their jobs' phases (the history
    files, emulator.jobhistory): the medians over the runs of am_startup_s (submission to the job's launch: AM
    container, JVM, job set-up; the first allocate call then follows on the AM's interval, which the emulator plays)
    and commit_s (last task's end to the application's end). Job times alone see only their sum plus the tasks'
    start-up, so without phases the fit splits `job_overhead_s` by AM_SHARE; with them the fit has one unknown
    fewer and task start-up is no longer traded against the AM's. None when any point lacks them."""
    am, commit = [], []
    for p in points:
        runs = [ph for ph in p.phases if ph.get("am_startup_s") is not None and ph.get("commit_s") is not None]
        if not runs:
            return None
        am += [float(ph["am_startup_s"]) for ph in runs]
        commit += [float(ph["commit_s"]) for ph in runs]
    return {"am_startup_s": float(np.median(am)), "commit_s": float(np.median(commit)), "runs": len(am),
            "am_startup_s_iqr": [float(np.percentile(am, 25)), float(np.percentile(am, 75))],
            "commit_s_iqr": [float(np.percentile(commit, 25)), float(np.percentile(commit, 75))]}


def _mean_phase(p: Point, name: str) -> float | None:
    values = [float(ph[name]) for ph in p.phases if ph.get(name) is not None]
    return float(np.mean(values)) if values else None


def _times(names: list[str], x: np.ndarray, base: TimeModel, am_share: float = AM_SHARE) -> TimeModel:
    d = base.to_dict()
    values = {n: float(v) for n, v in zip(names, np.exp(x))}
    overhead = values.pop("job_overhead_s", None)
    if overhead is not None:
        d["am_startup_s"], d["commit_s"] = am_share * overhead, (1 - am_share) * overhead
    d.update(values)
    d["shaped_transfers"] = True
    return TimeModel.from_dict(d)


def fit(points: list[Point], shaped: bool, episodes: int = DEFAULT_EPISODES, progress: bool = False,
        base: TimeModel | None = None, output_replication: int | None = 2, max_nfev: int = 100,
        am_share: float = AM_SHARE) -> dict:
    """Damped Gauss-Newton on the log-parameters with secant slopes over a wide step (FD_STEP): the emulator's
    times move in heartbeat-sized jumps, so an infinitesimal finite difference sees steps, not slopes. Each
    iteration tries the full step, then halves it, and keeps the first that lowers the cost."""
    base = base or TimeModel(output_replication=output_replication)
    pinned = measured_overheads(points)
    if pinned:
        base = replace(base, am_startup_s=pinned["am_startup_s"], commit_s=pinned["commit_s"])
    names = [n for n in FIT if (shaped or n != "link_efficiency") and not (pinned and n == "job_overhead_s")]
    x0 = np.log([FIT[n][0] for n in names])
    lo, hi = np.log([FIT[n][1] for n in names]), np.log([FIT[n][2] for n in names])
    weights = np.sqrt([len(p.job_time_s) for p in points])
    measured = np.array([[np.mean(p.job_time_s), np.mean(p.makespan_s)] for p in points])
    # a map task's mean run time (container launch to its end), where the history files give it: it separates
    # the tasks' start-up from their reading and computing, which job times leave to the prior
    map_times = [_mean_phase(p, "map_s") for p in points]
    with_maps = [i for i, m in enumerate(map_times) if m is not None]
    evals = [0]
    t0 = time.perf_counter()

    def residuals(x):
        times = _times(names, x, base, am_share)
        preds = [predict(p, times, episodes) for p in points]
        pred = np.array([[r["job_time_s"], r["makespan_s"]] for r in preds])
        evals[0] += 1
        if progress and sys.stderr.isatty():
            print(f"\r  fit: evaluation {evals[0]}, {time.perf_counter() - t0:.0f} s", end="", file=sys.stderr)
        data = (np.log(pred / measured) * weights[:, None]).ravel()
        if with_maps:
            data = np.concatenate([data, [math.log(preds[i]["map_time_s"] / map_times[i]) * weights[i]
                                          for i in with_maps]])
        # a weak prior towards the start values: directions the data do not determine stay near them
        return np.concatenate([data, PRIOR_WEIGHT * (x - x0)])

    x, r = x0.copy(), residuals(x0)
    cost = float(r @ r) / 2
    status = "iteration limit"
    jac = np.zeros((r.size, len(names)))
    while evals[0] + len(names) + 1 <= max_nfev:
        for j in range(len(names)):
            h = FD_STEP if x[j] + FD_STEP <= hi[j] else -FD_STEP
            xj = x.copy()
            xj[j] += h
            jac[:, j] = (residuals(xj) - r) / h
        lam = 1e-3 * np.trace(jac.T @ jac) / len(names)
        step = np.linalg.solve(jac.T @ jac + lam * np.eye(len(names)), -jac.T @ r)
        improved = False
        for alpha in (1.0, 0.5, 0.25, 0.1):
            if evals[0] >= max_nfev:
                break
            xn = np.clip(x + alpha * step, lo, hi)
            rn = residuals(xn)
            cn = float(rn @ rn) / 2
            if cn < cost:
                improved = True
                break
        if not improved:
            status = "no step lowers the cost (converged to the emulator's resolution)"
            break
        gain = (cost - cn) / max(cost, 1e-12)
        x, r, cost = xn, rn, cn
        if gain < 1e-3:
            status = "converged (relative cost change < 0.1 %)"
            break
    if progress and sys.stderr.isatty():
        print(file=sys.stderr)
    # standard deviations of the log-parameters from the last secant Jacobian (Gauss-Newton covariance)
    m, k = len(points) * 2 + len(with_maps), len(names)
    try:
        cov = np.linalg.inv(jac.T @ jac) * (2 * cost / max(m - k, 1))
        log_sd = {n: float(math.sqrt(max(cov[i, i], 0.0))) for i, n in enumerate(names)}
    except np.linalg.LinAlgError:
        log_sd = {n: float("inf") for n in names}
    times = _times(names, x, base, am_share)
    return {"times": times, "fitted": names, "log_sd": log_sd, "cost": cost, "evaluations": evals[0],
            "status": status, "seconds": round(time.perf_counter() - t0, 1), "measured": pinned}


def residual_table(points: list[Point], times: TimeModel, episodes: int = DEFAULT_EPISODES) -> list[dict]:
    """Per point: measured and predicted mean job time and makespan, relative errors, local-task rates."""
    rows = []
    for p in points:
        r = predict(p, times, episodes)
        jt, mk = float(np.mean(p.job_time_s)), float(np.mean(p.makespan_s))
        rows.append({"source": Path(p.source).name, "experiment": p.experiment, "policy": p.policy,
                     "runs": len(p.job_time_s), "job_time_s": jt, "job_time_s_pred": r["job_time_s"],
                     "job_time_sd": float(np.std(p.job_time_s, ddof=1)) if len(p.job_time_s) > 1 else float("nan"),
                     "job_time_err": r["job_time_s"] / jt - 1, "makespan_s": mk, "makespan_s_pred": r["makespan_s"],
                     "makespan_err": r["makespan_s"] / mk - 1, "local_task_rate": float(np.mean(p.local_task_rate)),
                     "local_task_rate_pred": r["local_task_rate"],
                     **({"map_time_s": mt, "map_time_s_pred": r["map_time_s"], "map_time_err": r["map_time_s"] / mt - 1}
                        if (mt := _mean_phase(p, "map_s")) else {})})
    return rows


def ranking_preserved(rows: list[dict]) -> dict[str, dict]:
    """Per experiment: the policies ordered by mean job time on the cluster and in the emulator, and whether the
    emulator keeps every order the cluster's runs show: a pair counts when its measured means differ by more than
    twice the standard error of the difference (Welch; a policy with one run takes the median coefficient of
    variation of the others),
    and the emulator must then order it the same way (an emulator tie within 2 % is a miss)."""
    out = {}
    # a policy with one run: the median coefficient of variation of the policies with more (10 % without any)
    cvs = [r["job_time_sd"] / r["job_time_s"] for r in rows if np.isfinite(r["job_time_sd"])]
    cv = float(np.median(cvs)) if cvs else 0.10
    for exp in sorted({(r["source"], r["experiment"]) for r in rows}):
        rs = [r for r in rows if (r["source"], r["experiment"]) == exp]
        pairs, kept = 0, 0
        for a in rs:
            for b in rs:
                gap = a["job_time_s"] - b["job_time_s"]
                sa = a["job_time_sd"] if np.isfinite(a["job_time_sd"]) else cv * a["job_time_s"]
                sb = b["job_time_sd"] if np.isfinite(b["job_time_sd"]) else cv * b["job_time_s"]
                se = math.sqrt(sa ** 2 / a["runs"] + sb ** 2 / b["runs"])
                if gap > 2 * se:
                    pairs += 1
                    kept += a["job_time_s_pred"] > 1.02 * b["job_time_s_pred"]
        out[f"{exp[0]}#{exp[1]}"] = {
            "cluster": [r["policy"] for r in sorted(rs, key=lambda r: r["job_time_s"])],
            "emulator": [r["policy"] for r in sorted(rs, key=lambda r: r["job_time_s_pred"])],
            "separated_pairs": pairs, "kept": kept, "preserved": kept == pairs}
    return out


def calibrate(results: list[str | Path], episodes: int = DEFAULT_EPISODES, decision_log: str | None = None,
              max_load: float | None = None, progress: bool = False, max_nfev: int = 60) -> dict:
    """The calibration document (see the module's docstring)."""
    from policy_engine.artifact import code_version

    points, shape, sources = load_points(results, max_load)
    log_check = check_decision_log(decision_log, points, results) if decision_log else None
    shaped = bool(shape.get("worker_egress_mbit"))
    result = fit(points, shaped, episodes, progress, max_nfev=max_nfev)
    rows = residual_table(points, result["times"], episodes)
    errs = [abs(r[k]) for r in rows for k in ("job_time_err", "makespan_err")]
    return {"format": FORMAT, "time_model_version": TIME_MODEL_VERSION, "code_version": code_version(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "shape": shape, "sources": sources,
            "decision_log": log_check, "max_load": max_load, "episodes": episodes,
            "runs": sum(len(p.job_time_s) for p in points),
            "scenario_params": _shape_params(points[0].params),
            "times": result["times"].to_dict(), "fitted": result["fitted"], "measured": result["measured"],
            "fit": {k: result[k] for k in ("cost", "evaluations", "status", "seconds", "log_sd")},
            "residuals": rows, "max_abs_error": max(errs), "mean_abs_error": float(np.mean(errs)),
            "ranking_preserved": ranking_preserved(rows)}


SHAPE_PARAMS = ("nodes", "racks", "node_memory_mb", "heartbeat_ms", "map_memory_mb", "replication",
                "remote_read_mb_s", "disk_read_mb_s", "am_cache_aware", "reduces")


def _shape_params(params: dict) -> dict:
    return {k: params[k] for k in SHAPE_PARAMS if k in params}


# ---------------------------------------------------------------------------------------------- using a file


def load_calibration(path: str | Path, warn: Callable[[str], None] | None = None) -> dict:
    """Read a calibration file; refuse another format or time-model version, warn about another code version."""
    from policy_engine.artifact import code_version

    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise CalibrationError(f"cannot read calibration {path}: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise CalibrationError(f"{path} is not a calibration file (format {FORMAT!r})")
    if doc.get("time_model_version") != TIME_MODEL_VERSION:
        raise CalibrationError(f"calibration {path} is of time-model version {doc.get('time_model_version')}, this "
                               f"emulator's is {TIME_MODEL_VERSION}: calibrate again")
    try:
        doc["time_model"] = TimeModel.from_dict(doc["times"])
    except (KeyError, TypeError, ValueError) as e:
        raise CalibrationError(f"calibration {path} has an invalid time model: {e}") from None
    if doc.get("code_version") != code_version():
        (warn or (lambda m: print(m, file=sys.stderr)))(
            f"warning: calibration {path} was fitted by code version {doc.get('code_version')}, this is "
            f"{code_version()}; using it")
    return doc


def scenario_params(doc: dict, params: dict) -> dict:
    """A scenario's parameters with a calibration: its cluster shape where `params` gives none, and its time model."""
    return {**doc.get("scenario_params", {}), **params, "times": doc["time_model"]}


def format_rows(rows: list[dict]) -> str:
    head = "| experiment | policy | runs | job time real / emulator (s) | error | makespan real / emulator (s) | error " \
           "| local-task rate real / emulator |"
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['source'].replace('real_locality-', '').replace('.json', '')}#{r['experiment']} "
                     f"| {r['policy']} | {r['runs']} | {r['job_time_s']:.1f} / {r['job_time_s_pred']:.1f} "
                     f"| {r['job_time_err']:+.0%} | {r['makespan_s']:.1f} / {r['makespan_s_pred']:.1f} "
                     f"| {r['makespan_err']:+.0%} | {r['local_task_rate']:.2f} / {r['local_task_rate_pred']:.2f} |")
    return "\n".join(lines)



# ---------------------------------------------------------------------------------------------- synthetic runs


def synthetic_results(times: TimeModel, experiments: dict[str, dict], policies=("fifo", "delay"), runs: int = 2,
                      seed0: int = 50_000, egress_mbit: float | None = 5.0, phases: bool = False) -> dict:
    """A results document in real_locality's format whose 'measurements' are the emulator's own, with `times`
    (the fit's recovery check): experiments {key 'app-<N>mb': {"maps": M, "blocks_per_node": [..4..]}}, on the
    container cluster's shape (4 workers in 2 racks, replication 1, 500 ms heartbeats), episode seeds other than the
    fit's. `phases`: each run also records the AM start-up and commit its history files would show."""
    from emulator.drivers import InProcessDriver
    from emulator.scenario import get_scenario

    node_racks = {"worker1": "/rack1", "worker2": "/rack1", "worker3": "/rack2", "worker4": "/rack2"}
    doc = {"cluster": "docker", "node_racks": node_racks, "seed": 0, "replication": 1,
           "worker_egress_mbit": egress_mbit, "clqlmrs_model": None, "experiments": {}}
    for key, spec in experiments.items():
        app, size = key.split("-")
        mb = int(size[:-2])
        maps = int(spec["maps"])
        per_node = dict(zip(sorted(node_racks), spec["blocks_per_node"]))
        params = {"nodes": 4, "racks": 2, "node_memory_mb": 4096, "replication": 1, "map_memory_mb": 512,
                  "maps": maps, "block_mb": 32, "cache_gb": 0.0, "am_cache_aware": False, "heartbeat_ms": 500,
                  "jobs": 2, "interarrival_s": 3.0, "reduces": 1}
        exp = {"files": maps, "input_bytes": maps * mb * MB, "cached_files": 0, "replication": 1,
               "blocks_per_node": per_node, "worker_egress_mbit": egress_mbit, "emulator_params": params,
               "policies": {}}
        point_params = {**params, "block_mb": mb,
                        "layout": ",".join(str(per_node[w]) for w in ("worker1", "worker3", "worker2", "worker4"))}
        if egress_mbit:
            point_params["remote_read_mb_s"] = egress_mbit * 1e6 / 8 / MB
        scenario = get_scenario(f"locality-{app}", **point_params, times=times)
        for policy in policies:
            per_run = []
            for r in range(runs):
                m = scenario.run_episode(InProcessDriver(_policy(policy, None, 0)), seed=seed0 + r)
                per_run.append({"succeeded": True, "job_time_s": m["job_time_s"], "makespan_s": m["makespan_s"],
                                "local_task_rate": m["local_task_rate"], "load_average": 1.0})
                if phases:  # what the history files would show: the AM's start-up, the commit, the maps' run time
                    per_run[-1]["phases"] = {"am_startup_s": times.am_startup_s, "commit_s": times.commit_s,
                                             "map_s": m["map_time_s"]}
            exp["policies"][policy] = {"per_run": per_run, "plugin": {"engine_decisions": 10 * runs}}
        doc["experiments"][key] = exp
    return doc


def clqlmrs_wait_cost(doc: dict, block_mb: float) -> float:
    """CLQLMRS's cost of one WAIT step in its locality reward's units, from a calibration: the job time a wait costs
    (until the next node's heartbeat: heartbeat / nodes) over what reading the block from another node instead of
    the local disk costs (block / (k * L) - block / r_DL), times the reward's span between those outcomes
    (DL +0.5 to NO -1). A job-time exchange rate between waiting and a remote read, where the paper's fixed cost
    is a guess."""
    from policy_engine.features.locality import REWARD, ReadLocality

    times = doc["time_model"] if "time_model" in doc else TimeModel.from_dict(doc["times"])
    shape = doc["scenario_params"]
    link = shape.get("remote_read_mb_s")
    rates = times.read_rates(link, shape.get("disk_read_mb_s"))
    remote_s = block_mb / rates[int(ReadLocality.NO)] - block_mb / rates[int(ReadLocality.DL)]
    wait_s = shape["heartbeat_ms"] / 1000.0 / shape["nodes"]
    span = float(REWARD[int(ReadLocality.DL)] - REWARD[int(ReadLocality.NO)])
    return round(span * wait_s / max(remote_s, 1e-6), 4)
