"""`emulator`: run, compare and train scheduling policies on emulated clusters."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from policy_engine.policy import OptionError

from policy_engine.cli import check_log_dir, check_target, parse_options
from policy_engine.cli import translate_error as engine_errors
from policy_engine.command import (DEBUG_ENV, CommandFailed, OneLineParser, UsageError, add_debug_flag,
                                   existing_file, positive, run_main)

DEFAULT_TIMEOUT_S = 5.0


def translate_error(e: BaseException) -> BaseException | None:
    """The emulator's own user-facing exceptions on top of the engine's (see policy_engine.cli)."""
    from emulator.drivers import EngineMismatch
    from emulator.scenario import UnknownScenario
    from emulator.training import IncompatibleAlgorithm, UnknownAlgorithm
    from emulator.yarn.cluster import SimulationError
    from emulator.yarn.traces import TraceError
    from emulator.calibration import CalibrationError

    if isinstance(e, (UnknownScenario, UnknownAlgorithm, IncompatibleAlgorithm)):
        return UsageError(str(e))
    if isinstance(e, (EngineMismatch, SimulationError, TraceError, CalibrationError)):
        return CommandFailed(str(e))
    return engine_errors(e)


def _scenario(args):
    from emulator.scenario import get_scenario

    params = parse_options(args.param, "--param")
    if getattr(args, "calibration", None) is not None:
        if not args.scenario.startswith("locality-"):
            raise UsageError(f"--calibration is for the locality-* scenarios (the node-heartbeat emulator), not "
                             f"{args.scenario!r}")
        params["calibration"] = existing_file(args.calibration)
    return get_scenario(args.scenario, **params)


def _check_common(args) -> None:
    """What every scenario command checks before building anything."""
    from emulator.scenario import scenario_spec

    scenario_spec(args.scenario)  # unknown names first: they make every other message moot
    if args.episodes is not None and args.episodes < 1:
        raise UsageError(f"--episodes must be at least 1, not {args.episodes}")
    if args.seed < 0:
        raise UsageError(f"--seed must be non-negative, not {args.seed}")


def _check_policies(scenario: str, names: list[str]) -> None:
    """Unknown policies and policies that cannot run this scenario's family, named with the valid ones."""
    from emulator.scenario import check_policy

    for n in names:
        check_policy(scenario, n)


def _check_remote(args, policies: list[str], models: dict[str, str]) -> None:
    positive("--timeout", args.timeout)
    check_log_dir("--decision-log", args.decision_log, args.log_rotate_mb)
    if args.decision_log is not None and args.remote not in (None, "spawn"):
        raise UsageError(f"--decision-log is for in-process runs and --remote spawn; the engine at {args.remote} "
                         "writes its own log (start it with `policy-engine serve --decision-log DIR`)")
    if args.remote is None or args.remote == "spawn":
        return
    check_target(args.remote)
    if models:
        raise UsageError(f"--model is for in-process runs and --remote spawn; the engine at {args.remote} serves "
                         "the model it was started with")


def _prebuild_for_spawn(args, policies: list[str], models: dict[str, str]) -> None:
    """With --remote spawn, build each policy here first, so a bad model or option is reported like in-process
    (and not as a child that would not start)."""
    from policy_engine.cli import build_policy

    if args.remote == "spawn":
        for p in policies:
            build_policy(p, models.get(p), {})


def parse_models(pairs: list[str]) -> dict[str, str]:
    """`--model POLICY=PATH` pairs; policy names keep their dashes (rl-fc)."""
    out = {}
    for pair in pairs:
        policy, sep, path = pair.partition("=")
        if not sep or not policy or not path:
            raise UsageError(f"--model takes POLICY=PATH, got {pair!r}")
        out[policy] = path
    return out


def cmd_scenarios(args) -> int:
    from emulator.scenario import policies_for_scenario, scenarios
    from emulator.training import algorithms_for

    specs = scenarios()
    if args.json:
        print(json.dumps({"scenarios": [{"name": s.name, "summary": s.summary, "family": s.family, "needs": s.needs,
                                         "policies": policies_for_scenario(s.name),
                                         "algorithms": algorithms_for(s.name)} for s in specs]}))
        return 0
    width = max((len(s.name) for s in specs), default=0)
    for s in specs:
        print(f"{s.name:<{width}}  {s.summary}")
    return 0


def cmd_run(args) -> int:
    from emulator.evaluate import compare, format_table

    _check_common(args)
    _check_policies(args.scenario, [args.policy])
    models = {args.policy: existing_file(args.model)} if args.model else {}
    _check_remote(args, [args.policy], models)
    if args.shadow is not None:
        if args.remote is None:
            raise UsageError("--shadow asks an engine in shadow mode: give --remote HOST:PORT or --remote spawn")
        _check_policies(args.scenario, [args.shadow])
    scenario = _scenario(args)
    _prebuild_for_spawn(args, [args.policy], models)
    result = compare(scenario, [args.policy], args.episodes or scenario.default_episodes, args.seed,
                     models=models, remote=args.remote, progress=not args.no_progress, timeout=args.timeout,
                     decision_log=args.decision_log, log_rotate_mb=args.log_rotate_mb, shadow=args.shadow,
                     batched=args.batched)
    result["mode"] = ("shadow" if args.shadow else "remote" if args.remote else "in-process") + (
        " batched" if args.batched else "")
    if not args.json:
        print(format_table(result))
    print(json.dumps(result) if args.json else "", end="\n" if args.json else "")
    return 0


def cmd_compare(args) -> int:
    from emulator.evaluate import compare, format_table
    from emulator.scenario import scenario_spec

    _check_common(args)
    if args.policies is not None:
        policies = [p.strip() for p in args.policies.split(",") if p.strip()]
        if not policies:
            raise UsageError(f"--policies names no policy, got {args.policies!r}")
    else:
        factory = scenario_spec(args.scenario).factory
        # a scenario class knows its baselines without being built (`trace` cannot be built without a file)
        policies = list(getattr(factory, "default_policies", None) or factory().default_policies)
    _check_policies(args.scenario, policies)
    if args.against is not None and args.against not in policies:
        raise UsageError(f"--against {args.against!r} is not among the compared policies {','.join(policies)}")
    models = parse_models(args.model or [])
    unknown = sorted(set(models) - set(policies))
    if unknown:
        raise UsageError(f"--model names {', '.join(unknown)}, not among --policies {','.join(policies)}")
    for path in models.values():
        existing_file(path)
    if args.remote is not None and args.remote != "spawn":
        raise UsageError(f"compare --remote takes only 'spawn' (one engine per policy), not {args.remote!r}; "
                         "for an engine already running use `emulator run --remote HOST:PORT`")
    _check_remote(args, policies, models)
    scenario = _scenario(args)
    _prebuild_for_spawn(args, policies, models)
    result = compare(scenario, policies, args.episodes or scenario.default_episodes, args.seed,
                     against=args.against, models=models, remote=args.remote, progress=not args.no_progress,
                     timeout=args.timeout, decision_log=args.decision_log, log_rotate_mb=args.log_rotate_mb)
    result["mode"] = "remote" if args.remote else "in-process"
    if not args.json:
        print(format_table(result))
    print(json.dumps(result) if args.json else "", end="\n" if args.json else "")
    return 0


def cmd_train(args) -> int:
    from emulator.training import check_algo, train

    _check_common(args)
    check_algo(args.algo, args.scenario)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {args.out} is a file; it names the directory for checkpoints and the model")
    options = parse_options(args.set)
    rollouts = _rollouts(args)
    if args.from_log is not None or args.compare_model is not None:
        if rollouts is not None:
            raise UsageError("--workers / --ray are for online training, not --from-log")
        return _train_from_log(args, out, options)
    scenario = _scenario(args)
    try:
        result = train(args.algo, scenario, episodes=args.episodes, seed=args.seed, out=args.out,
                       resume=args.resume, progress=not args.no_progress, options=options, rollouts=rollouts)
    except OptionError as e:  # an unknown or out-of-range --set
        raise UsageError(str(e)) from None
    except ValueError as e:  # a checkpoint from other settings, --resume without one: say so
        raise CommandFailed(str(e)) from None
    except OSError as e:  # an --out that cannot be created or written
        raise CommandFailed(f"cannot write the run to --out {args.out}: {e.strerror or e}"
                            + (f" ({e.filename})" if e.filename and str(e.filename) != args.out else "")) from None
    print(json.dumps(result))
    return 0


def _rollouts(args):
    """--workers / --ray as a RolloutSpec (None when neither was given), checked before anything is built."""
    from emulator.learners.rollouts import RolloutSpec
    from emulator.training import algo_spec, parallel_algorithms

    if args.workers is None and args.ray is None:
        return None
    workers = 1 if args.workers is None else args.workers
    if workers < 1:
        raise UsageError(f"--workers must be at least 1, not {workers}")
    if args.ray is not None and not args.ray.strip():
        raise UsageError("--ray takes a Ray cluster address (HOST:PORT, ray://HOST:PORT, auto) or 'local'")
    if algo_spec(args.algo).parallel:
        return RolloutSpec(workers, args.ray)
    raise UsageError(f"--workers / --ray play episodes in parallel for {', '.join(parallel_algorithms())}, "
                     f"not {args.algo}")


def decision_log_options(sp) -> None:
    sp.add_argument("--decision-log", metavar="DIR",
                    help="write every decision and Report event to Parquet files in DIR, in the format of "
                         "`policy-engine serve --decision-log` (see docs/decision-log.md)")
    sp.add_argument("--log-rotate-mb", type=float, metavar="MB",
                    help="start a new decision-log file once one holds this many MB (default 64)")


def cmd_replay(args) -> int:
    from emulator.replay import format_replay, replay
    from policy_engine.decision_log import DecisionLogError
    from policy_engine.policy import spec

    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    if not policies:
        raise UsageError(f"--policies names no policy, got {args.policies!r}")
    for p in policies:
        spec(p)  # unknown names: one line with the registered ones
    if len(set(policies)) != len(policies):
        raise UsageError(f"--policies names a policy twice: {args.policies!r}")
    models = parse_models(args.model or [])
    unknown = sorted(set(models) - set(policies))
    if unknown:
        raise UsageError(f"--model names {', '.join(unknown)}, not among --policies {','.join(policies)}")
    for path in models.values():
        existing_file(path)
    if args.limit is not None and args.limit < 1:
        raise UsageError(f"--limit must be at least 1, not {args.limit}")
    if not Path(args.log).is_dir():
        raise UsageError(f"--log {args.log} is not a directory (the DIR given to --decision-log)")
    try:
        result = replay(args.log, policies, models, limit=args.limit, progress=not args.no_progress)
        from policy_engine.shadow import shadow_comparison

        shadow = shadow_comparison(args.log)  # a log recorded in shadow mode: the engine's mix against YARN's
    except DecisionLogError as e:
        raise CommandFailed(str(e)) from None
    if shadow is not None:
        result["shadow"] = shadow
        if not args.json:
            print(f"shadow mode: {shadow['decisions']} decisions; containers the engine would have placed "
                  f"{shadow['engine']}, YARN placed {shadow['yarn']}")
    if not args.json:
        print(format_replay(result))
    print(json.dumps(result) if args.json else "", end="\n" if args.json else "")
    return 0


def _train_from_log(args, out: Path, options: dict) -> int:
    from policy_engine.decision_log import DecisionLogError

    if args.from_log is None:
        raise UsageError("--compare-model needs --from-log DIR")
    if args.algo != "clqlmrs":
        raise UsageError(f"--from-log learns CLQLMRS's table (--algo clqlmrs), not {args.algo!r}")
    if args.resume:
        raise UsageError("--from-log trains from scratch: --resume is for online training")
    if not Path(args.from_log).is_dir():
        raise UsageError(f"--from-log {args.from_log} is not a directory (the DIR given to --decision-log)")
    if args.compare_model is not None:
        existing_file(args.compare_model)
    from algorithms.clqlmrs.train_from_log import train_clqlmrs_from_log

    scenario = _scenario(args)
    try:
        result = train_clqlmrs_from_log(scenario, args.from_log, args.episodes, args.seed, out,
                                        progress=not args.no_progress, options=options,
                                        compare_model=args.compare_model)
    except OptionError as e:
        raise UsageError(str(e)) from None
    except (DecisionLogError, ValueError) as e:
        raise CommandFailed(str(e)) from None
    except OSError as e:
        raise CommandFailed(f"cannot write the run to --out {args.out}: {e.strerror or e}") from None
    print(json.dumps(result))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="emulator",
                      description="Emulated YARN clusters and multi-cluster federations that ask the policy engine "
                                  "for every decision, in-process or over gRPC.",
                      epilog="Mistakes end in one line on stderr and exit 2 (the command line is wrong) or 1 (it "
                             f"failed while running); --debug or {DEBUG_ENV}=1 shows the traceback of an internal "
                             "error.")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp, episodes_help="episodes (default: the scenario's)"):
        sp.add_argument("--scenario", required=True, help="scenario name (see `emulator scenarios`)")
        sp.add_argument("--param", action="append", metavar="KEY=VALUE",
                        help="scenario parameter, repeatable (e.g. --param b=36)")
        sp.add_argument("--episodes", type=int, help=episodes_help)
        sp.add_argument("--seed", type=int, default=0, help="seed of episode 0; episode i uses seed+i (default 0)")
        sp.add_argument("--no-progress", action="store_true", help="no progress bar")
        sp.add_argument("--calibration", metavar="FILE",
                        help="locality-* scenarios: run the time model and cluster shape fitted to real runs by "
                             "`emulator calibrate` (--param values override the shape)")

    s = sub.add_parser("scenarios", help="list scenarios")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.set_defaults(fn=cmd_scenarios)

    r = sub.add_parser("run", help="run one policy on a scenario and print its metrics")
    common(r)
    r.add_argument("--policy", required=True, help="policy name (see `policy-engine policies`)")
    r.add_argument("--model", help="model artifact for a learned policy")
    r.add_argument("--remote", metavar="HOST:PORT",
                   help="ask a running `policy-engine serve` over gRPC instead of in-process; 'spawn' starts one")
    r.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help="how long to wait for the engine at --remote to answer, and every call's deadline "
                        f"(default {DEFAULT_TIMEOUT_S:g})")
    r.add_argument("--shadow", metavar="NATIVE",
                   help="shadow mode, as the plugin's yarnrl.engine.mode=shadow: ask the engine at --remote (policy "
                        "--policy) without applying its answers and place with NATIVE in process (YARN's stand-in, "
                        "e.g. delay); the metrics are NATIVE's, the engine records the comparison")
    r.add_argument("--batched", action="store_true",
                   help="send every heartbeat through the batched path (ScheduleBatch), as a plugin that batches "
                        "does; the decisions are the same")
    r.add_argument("--json", action="store_true", help="last line of stdout is one JSON object")
    decision_log_options(r)
    r.set_defaults(fn=cmd_run)

    c = sub.add_parser("compare", help="compare policies on the same seeded episodes, in the papers' tables")
    common(c)
    c.add_argument("--policies", help="comma-separated policy names (default: the scenario's baselines)")
    c.add_argument("--against", help="baseline the scores (Score-A..D, F/S/N, ratios) are computed against")
    c.add_argument("--model", action="append", metavar="POLICY=PATH", help="model artifact for a learned policy")
    c.add_argument("--remote", metavar="spawn",
                   help="'spawn': run every policy behind its own `policy-engine serve` over gRPC")
    c.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help=f"deadline of every call to a spawned engine (default {DEFAULT_TIMEOUT_S:g})")
    c.add_argument("--json", action="store_true", help="last line of stdout is one JSON object")
    decision_log_options(c)
    c.set_defaults(fn=cmd_compare)

    t = sub.add_parser("train", help="train a learned policy on a scenario")
    common(t, episodes_help="training episodes (default: the algorithm's)")
    t.add_argument("--algo", required=True, help="learning algorithm (e.g. rl-fc, clqlmrs)")
    t.add_argument("--out", required=True, help="output directory: checkpoints, learning curve, model artifact")
    t.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in --out")
    t.add_argument("--set", action="append", metavar="KEY=VALUE", help="hyper-parameter override, repeatable")
    t.add_argument("--from-log", metavar="DIR",
                   help="clqlmrs: learn by SARSA over the transitions of a decision log instead of online "
                        "(--episodes: passes over the log, default 10; the scenario evaluates the table)")
    t.add_argument("--compare-model", metavar="PATH",
                   help="with --from-log: compare the learned table with this one (e.g. online-learned)")
    t.add_argument("--workers", type=int, metavar="N",
                   help="rl-fc, rl-lsfc, deeprm-pg: play the episodes in N local processes while the learner "
                        "updates (default 1: in the learner's process); the same --seed trains the same model with "
                        "any N. With --ray: how many Ray tasks a local instance runs at once")
    t.add_argument("--ray", metavar="ADDRESS",
                   help="play the episodes as Ray tasks on the cluster at ADDRESS (ray://HOST:PORT, HOST:PORT or "
                        "auto; 'local' starts one on this machine with --workers CPUs); needs "
                        "pip install 'yarn-rl[ray]'. Same seed, same model as with local workers")
    t.set_defaults(fn=cmd_train)

    rp = sub.add_parser("replay", help="decide a decision log's observations again with other policies",
                        description="Read a Parquet decision log (policy-engine serve / emulator run --decision-log), "
                                    "re-decide every logged observation with each policy and report how often they "
                                    "agree with each other and with the logged decision, and the locality levels "
                                    "each chose.")
    rp.add_argument("--log", required=True, metavar="DIR", help="decision-log directory")
    rp.add_argument("--policies", required=True, help="comma-separated policies to replay (e.g. fifo,delay,clqlmrs)")
    rp.add_argument("--model", action="append", metavar="POLICY=PATH", help="model artifact for a learned policy")
    rp.add_argument("--limit", type=int, metavar="N", help="replay only the first N decisions")
    rp.add_argument("--json", action="store_true", help="last line of stdout is one JSON object")
    rp.add_argument("--no-progress", action="store_true", help="no progress bar")
    rp.set_defaults(fn=cmd_replay)

    cal = sub.add_parser(
        "calibrate", help="fit the node-heartbeat emulator's time model to real runs (real_locality results)",
        description="Fit the locality emulator's time model (ApplicationMaster and task start-up, job commit, CPU "
                    "factor, shaped-link efficiency; equations in emulator/yarn/timing.py) to the results of "
                    "benchmarks/real_locality.py runs on one cluster shape, and write a calibration file that "
                    "`emulator run/compare/train --calibration FILE` and yarnrl/Locality-v0 (calibration=FILE) use.",
        epilog="Refused with one line: fewer than 6 policy runs, runs of different cluster shapes, a decision log "
               "that does not match the results. Example: emulator calibrate --runs "
               "benchmarks/results/real_locality/real_locality-docker-sort-4mb-rep1-egress5mbit-r3.json "
               "benchmarks/results/real_locality/real_locality-docker-wordcount-4mb-rep1-egress5mbit-r3.json "
               "--out models/calibration-docker-egress5.json")
    cal.add_argument("--runs", nargs="+", required=True, metavar="RESULTS_JSON",
                     help="real_locality results files (one cluster shape)")
    cal.add_argument("--out", required=True, metavar="FILE", help="the calibration file to write (JSON)")
    cal.add_argument("--decision-log", metavar="DIR", help="the engine's decision log of these runs, checked "
                                                           "against the results")
    cal.add_argument("--predict", nargs="+", metavar="RESULTS_JSON",
                     help="held-out results of the same shape: print the calibrated emulator's prediction beside "
                          "them (not fitted)")
    cal.add_argument("--episodes", type=int, default=3, help="emulator episodes per prediction (default 3)")
    cal.add_argument("--max-load", type=float, metavar="LOAD",
                     help="leave out runs that ended at a 1-min load average above LOAD (a shared machine)")
    cal.add_argument("--max-evaluations", type=int, default=60, help="fit budget in emulator evaluations "
                                                                      "(default 60)")
    cal.add_argument("--json", action="store_true", help="last line of stdout is one JSON object")
    cal.add_argument("--no-progress", action="store_true", help="no progress output")
    cal.set_defaults(fn=cmd_calibrate)

    add_debug_flag(p)
    return p


def cmd_calibrate(args) -> int:
    from emulator.calibration import calibrate, format_rows, load_points, residual_table, ranking_preserved
    from emulator.yarn.timing import TimeModel

    for path in [*args.runs, *(args.predict or [])]:
        existing_file(path)
    if args.decision_log is not None and not Path(args.decision_log).is_dir():
        raise UsageError(f"--decision-log {args.decision_log} is not a directory")
    if args.episodes < 1 or args.max_evaluations < 5:
        raise UsageError("--episodes must be at least 1 and --max-evaluations at least 5")
    out = Path(args.out)
    if out.is_dir():
        raise UsageError(f"--out {args.out} is a directory; it names the calibration file")
    doc = calibrate(args.runs, args.episodes, args.decision_log, args.max_load, progress=not args.no_progress,
                    max_nfev=args.max_evaluations)
    if args.predict:
        points, shape, _ = load_points(args.predict, args.max_load)
        if shape != doc["shape"]:
            diff = ", ".join(f"{k} {doc['shape'].get(k)} vs {shape.get(k)}" for k in shape
                             if shape.get(k) != doc["shape"].get(k))
            raise CommandFailed(f"--predict runs of another cluster shape: {diff}")
        rows = residual_table(points, TimeModel.from_dict(doc["times"]), args.episodes)
        doc["held_out"] = {"residuals": rows, "ranking_preserved": ranking_preserved(rows)}
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, indent=1) + "\n")
    except OSError as e:
        raise CommandFailed(f"cannot write --out {args.out}: {e.strerror or e}") from None
    if not args.json:
        t = doc["times"]
        print(f"calibrated on {doc['runs']} runs ({', '.join(Path(s['path']).name for s in doc['sources'])}); "
              f"{doc['fit']['evaluations']} evaluations, {doc['fit']['seconds']} s")
        print("  " + ", ".join(f"{k} {t[k]:.3g}" for k in doc["fitted"]))
        print("fit residuals:\n" + format_rows(doc["residuals"]))
        if args.predict:
            print("held out:\n" + format_rows(doc["held_out"]["residuals"]))
        for exp, rank in (doc.get("held_out") or doc)["ranking_preserved"].items():
            print(f"ranking {exp}: cluster {' < '.join(rank['cluster'])}, emulator {' < '.join(rank['emulator'])}; "
                  f"{rank['kept']}/{rank['separated_pairs']} orders the runs separate kept")
        print(f"wrote {out}")
    print(json.dumps({k: doc[k] for k in ("times", "fitted", "runs", "max_abs_error", "mean_abs_error",
                                          "ranking_preserved")} | ({"held_out": doc["held_out"]} if args.predict
                                                                   else {})) if args.json else "",
          end="\n" if args.json else "")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_main(build_parser(), argv, translate_error)


if __name__ == "__main__":
    sys.exit(main())
