"""`emulator`: run, compare and train scheduling policies on emulated clusters."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from policy_engine.policy import OptionError

from policy_engine.cli import check_target, parse_options
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

    if isinstance(e, (UnknownScenario, UnknownAlgorithm, IncompatibleAlgorithm)):
        return UsageError(str(e))
    if isinstance(e, (EngineMismatch, SimulationError)):
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
    scenario = _scenario(args)
    _prebuild_for_spawn(args, [args.policy], models)
    result = compare(scenario, [args.policy], args.episodes or scenario.default_episodes, args.seed,
                     models=models, remote=args.remote, progress=not args.no_progress, timeout=args.timeout)
    result["mode"] = "remote" if args.remote else "in-process"
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
        policies = list(scenario_spec(args.scenario).factory().default_policies)
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
                     timeout=args.timeout)
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
    r.add_argument("--json", action="store_true", help="last line of stdout is one JSON object")
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
    c.set_defaults(fn=cmd_compare)

    t = sub.add_parser("train", help="train a learned policy on a scenario")
    common(t, episodes_help="training episodes (default: the algorithm's)")
    t.add_argument("--algo", required=True, help="learning algorithm (e.g. rl-fc, clqlmrs)")
    t.add_argument("--out", required=True, help="output directory: checkpoints, learning curve, model artifact")
    t.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in --out")
    t.add_argument("--set", action="append", metavar="KEY=VALUE", help="hyper-parameter override, repeatable")
    t.set_defaults(fn=cmd_train)

    add_debug_flag(p)
    return p


def main(argv: list[str] | None = None) -> int:
    return run_main(build_parser(), argv, translate_error)


if __name__ == "__main__":
    sys.exit(main())
