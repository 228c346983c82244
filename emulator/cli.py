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

    if isinstance(e, (UnknownScenario, UnknownAlgorithm, IncompatibleAlgorithm)):
        return UsageError(str(e))
    if isinstance(e, (EngineMismatch, SimulationError, TraceError)):
        return CommandFailed(str(e))
    return engine_errors(e)


def _scenario(args):
    from emulator.scenario import get_scenario

    return get_scenario(args.scenario, **parse_options(args.param, "--param"))


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
    if args.shadow_native is not None:
        if args.remote in (None, "spawn"):
            raise UsageError("--shadow-native needs --remote HOST:PORT: the engine serving there shadows the run")
        _check_policies(args.scenario, [args.shadow_native])
    scenario = _scenario(args)
    _prebuild_for_spawn(args, [args.policy], models)
    result = compare(scenario, [args.policy], args.episodes or scenario.default_episodes, args.seed,
                     models=models, remote=args.remote, progress=not args.no_progress, timeout=args.timeout,
                     decision_log=args.decision_log, log_rotate_mb=args.log_rotate_mb,
                     shadow_native=args.shadow_native)
    result["mode"] = "shadow" if args.shadow_native else "remote" if args.remote else "in-process"
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
    if args.from_log is not None or args.compare_model is not None:
        return _train_from_log(args, out, options)
    scenario = _scenario(args)
    try:
        result = train(args.algo, scenario, episodes=args.episodes, seed=args.seed, out=args.out,
                       resume=args.resume, progress=not args.no_progress, options=options)
    except OptionError as e:  # an unknown or out-of-range --set
        raise UsageError(str(e)) from None
    except ValueError as e:  # a checkpoint from other settings, --resume without one: say so
        raise CommandFailed(str(e)) from None
    except OSError as e:  # an --out that cannot be created or written
        raise CommandFailed(f"cannot write the run to --out {args.out}: {e.strerror or e}"
                            + (f" ({e.filename})" if e.filename and str(e.filename) != args.out else "")) from None
    print(json.dumps(result))
    return 0


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
    except DecisionLogError as e:
        raise CommandFailed(str(e)) from None
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
    from emulator.learners.clqlmrs_log import train_clqlmrs_from_log

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
    r.add_argument("--shadow-native", metavar="POLICY",
                   help="shadow mode: POLICY (in-process, standing in for YARN, e.g. delay) places every container, "
                        "the engine at --remote serving --policy is asked on the same heartbeats in shadow and told "
                        "what was placed; the scores are POLICY's")
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

    add_debug_flag(p)
    return p


def main(argv: list[str] | None = None) -> int:
    return run_main(build_parser(), argv, translate_error)


if __name__ == "__main__":
    sys.exit(main())
