"""`emulator`: run, compare and train scheduling policies on emulated clusters."""

from __future__ import annotations

import argparse
import json
import sys

from policy_engine.cli import parse_options


def _scenario(args):
    from emulator.scenario import UnknownScenario, get_scenario

    try:
        return get_scenario(args.scenario, **parse_options(args.param))
    except (UnknownScenario, ValueError) as e:
        raise SystemExit(f"emulator: {e}") from None


def _check_policies(names: list[str]) -> None:
    from policy_engine.policy import UnknownPolicy, spec

    for n in names:
        try:
            spec(n)
        except UnknownPolicy as e:
            raise SystemExit(f"emulator: {e}") from None


def parse_models(pairs: list[str]) -> dict[str, str]:
    """`--model POLICY=PATH` pairs; policy names keep their dashes (rl-fc)."""
    out = {}
    for pair in pairs:
        policy, sep, path = pair.partition("=")
        if not sep or not policy or not path:
            raise SystemExit(f"emulator: --model takes POLICY=PATH, got {pair!r}")
        out[policy] = path
    return out


def cmd_scenarios(args) -> int:
    from emulator.scenario import scenarios

    specs = scenarios()
    if args.json:
        print(json.dumps({"scenarios": [{"name": s.name, "summary": s.summary} for s in specs]}))
        return 0
    width = max((len(s.name) for s in specs), default=0)
    for s in specs:
        print(f"{s.name:<{width}}  {s.summary}")
    return 0


def cmd_run(args) -> int:
    from emulator.evaluate import compare, format_table

    _check_policies([args.policy])
    scenario = _scenario(args)
    models = {args.policy: args.model} if args.model else {}
    try:
        result = compare(scenario, [args.policy], args.episodes or scenario.default_episodes, args.seed,
                         models=models, remote=args.remote, progress=not args.no_progress)
    except ValueError as e:  # e.g. a learned policy without --model, or a refused model artifact
        raise SystemExit(f"emulator: {e}") from None
    result["mode"] = "remote" if args.remote else "in-process"
    if not args.json:
        print(format_table(result))
    print(json.dumps(result) if args.json else "", end="\n" if args.json else "")
    return 0


def cmd_compare(args) -> int:
    from emulator.evaluate import compare, format_table

    scenario = _scenario(args)
    policies = [p for p in (args.policies or ",".join(scenario.default_policies)).split(",") if p]
    if not policies:
        raise SystemExit("emulator: --policies is empty")
    _check_policies(policies)
    models = parse_models(args.model or [])
    unknown = sorted(set(models) - set(policies))
    if unknown:
        raise SystemExit(f"emulator: --model names {', '.join(unknown)}, not among --policies {','.join(policies)}")
    try:
        result = compare(scenario, policies, args.episodes or scenario.default_episodes, args.seed,
                         against=args.against, models=models, remote=args.remote, progress=not args.no_progress)
    except (ValueError, RuntimeError) as e:  # bad model or option; an engine that would not start
        raise SystemExit(f"emulator: {e}") from None
    result["mode"] = "remote" if args.remote else "in-process"
    if not args.json:
        print(format_table(result))
    print(json.dumps(result) if args.json else "", end="\n" if args.json else "")
    return 0


def cmd_train(args) -> int:
    from emulator.training import UnknownAlgorithm, train

    scenario = _scenario(args)
    try:
        result = train(args.algo, scenario, episodes=args.episodes, seed=args.seed, out=args.out,
                       resume=args.resume, progress=not args.no_progress, options=parse_options(args.set))
    except (UnknownAlgorithm, ValueError) as e:  # bad options, a checkpoint from other settings: say so, no traceback
        raise SystemExit(f"emulator: {e}") from None
    print(json.dumps(result))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="emulator",
                                description="Emulated YARN clusters and multi-cluster federations that ask the "
                                            "policy engine for every decision, in-process or over gRPC.")
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
    r.add_argument("--json", action="store_true", help="last line of stdout is one JSON object")
    r.set_defaults(fn=cmd_run)

    c = sub.add_parser("compare", help="compare policies on the same seeded episodes, in the papers' tables")
    common(c)
    c.add_argument("--policies", help="comma-separated policy names (default: the scenario's baselines)")
    c.add_argument("--against", help="baseline the scores (Score-A..D, F/S/N, ratios) are computed against")
    c.add_argument("--model", action="append", metavar="POLICY=PATH", help="model artifact for a learned policy")
    c.add_argument("--remote", metavar="spawn",
                   help="'spawn': run every policy behind its own `policy-engine serve` over gRPC")
    c.add_argument("--json", action="store_true", help="last line of stdout is one JSON object")
    c.set_defaults(fn=cmd_compare)

    t = sub.add_parser("train", help="train a learned policy on a scenario")
    common(t, episodes_help="training episodes (default: the algorithm's)")
    t.add_argument("--algo", required=True, help="learning algorithm (e.g. rl-fc, clqlmrs)")
    t.add_argument("--out", required=True, help="output directory: checkpoints, learning curve, model artifact")
    t.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in --out")
    t.add_argument("--set", action="append", metavar="KEY=VALUE", help="hyper-parameter override, repeatable")
    t.set_defaults(fn=cmd_train)

    args = p.parse_args(argv)
    from policy_engine.extras import MissingExtra

    try:
        return args.fn(args)
    except MissingExtra as e:
        raise SystemExit(f"emulator: {e}") from None


if __name__ == "__main__":
    sys.exit(main())
