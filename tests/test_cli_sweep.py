"""Every CLI mistake gets one clear line: a sweep of all commands against bad input.

The commands come from the argparse parsers themselves (`policy-engine` and `emulator`), so a command another
branch adds is swept too: it gets the generic cases (an unknown flag, its required arguments left out) and this
module fails until someone writes cases of its own for it. The cases: every mismatched pair the registries can
form (policies vs scenario families, training algorithms vs scenarios, model files of another policy); missing,
corrupt, empty and wrong-type files; unreachable and wrong-protocol remotes (nothing listening, a silent TCP
listener, one that hangs up, an HTTP server, an engine serving another policy); out-of-range values; unknown
--param / --set keys. Each must end with exit 2 (the command line is wrong) or 1 (it failed while running), exactly
one line on stderr that names what was wrong (and, where there is a list, what is valid), no traceback, and within
its time bound. Cases run in-process (main(argv)); a representative subset also as real processes.
"""

from __future__ import annotations

import argparse
import http.server
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import emulator.cli
import policy_engine.cli
from emulator.scenario import scenarios
from emulator.training import _ALGOS, algorithms
from policy_engine.command import DEBUG_ENV
from policy_engine.policy import available

REPO = Path(__file__).resolve().parents[1]
RL_FC_MODEL = str(REPO / "models" / "rl-fc-uniform.safetensors")
PROGRAMS = {"policy-engine": policy_engine.cli, "emulator": emulator.cli}
MODULES = {"policy-engine": "policy_engine.cli", "emulator": "emulator.cli"}
IN_PROCESS_LIMIT_S = 20.0  # a loaded 2-core machine; the remote cases have their own, tighter bounds
PROCESS_START_S = 30.0     # interpreter start and imports (torch for `emulator train`) on that machine


@dataclass
class Case:
    prog: str
    argv: list[str]
    code: int                                  # 2: usage, 1: runtime
    must: tuple[str, ...] = ()                 # regexes the one stderr line must contain
    limit_s: float = IN_PROCESS_LIMIT_S
    subprocess: bool = False                   # also run as a real process
    id: str = ""
    tags: set[str] = field(default_factory=set)

    @property
    def command(self) -> str:
        return next((a for a in self.argv if not a.startswith("-")), "")


def subcommands(prog: str) -> dict[str, argparse.ArgumentParser]:
    parser = PROGRAMS[prog].build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def required_flags(sub: argparse.ArgumentParser) -> list[str]:
    return [a.option_strings[0] for a in sub._actions if a.required and a.option_strings]


# ---------------------------------------------------------------------------------------------------------------
# The cases. Placeholders in {braces} are filled at run time from the `env` fixture (files, listeners, engines).

POLICIES = {s.name: s for s in available()}
SCENARIOS = {s.name: s for s in scenarios()}
ALGOS = algorithms()
SCHEDULE_POLICIES = [p for p, s in POLICIES.items() if "schedule" in s.capabilities]
ROUTE_POLICIES = [p for p, s in POLICIES.items() if "route" in s.capabilities]
MODEL_FOR = {"rl-fc": "{rl_fc_model}", "clqlmrs": "{clqlmrs_model}"}  # model files of each learned policy we have


def a_policy_for(scenario: str) -> str | None:
    """A policy that runs `scenario` and needs no model file."""
    s = SCENARIOS[scenario]
    return next((p for p, ps in POLICIES.items() if ps.runs_on(s.needs, s.family) and ps.model != "required"), None)


def a_scenario_for(policy: str) -> str | None:
    return next((n for n, s in SCENARIOS.items() if POLICIES[policy].runs_on(s.needs, s.family)), None)


def model_args(policy: str) -> list[str]:
    return ["--model", MODEL_FOR[policy]] if POLICIES[policy].model == "required" and policy in MODEL_FOR else []


def small(scenario: str) -> list[str]:
    """--param/--episodes that keep an episode short, for the cases that get as far as running one."""
    family = SCENARIOS[scenario].family
    params = {"locality": ["jobs=1"], "deeprm": ["simu_len=5"], "multicluster": ["jobs=10"]}.get(family, [])
    return [x for p in params for x in ("--param", p)] + ["--episodes", "1", "--no-progress"]


def generic_cases() -> list[Case]:
    """For every subcommand of both programs, including ones added after this test was written."""
    cases = []
    for prog in PROGRAMS:
        cases.append(Case(prog, [], 2, ("required",), id=f"{prog}-no-command"))
        cases.append(Case(prog, ["no-such-command"], 2, ("invalid choice", "serve|run"), id=f"{prog}-bad-command"))
        for name, sub in subcommands(prog).items():
            filled = [x for flag in required_flags(sub) for x in (flag, "x")]
            cases.append(Case(prog, [name, *filled, "--no-such-flag"], 2, ("--no-such-flag", "--help"),
                              id=f"{prog}-{name}-unknown-flag", tags={"generic"}))
            if required_flags(sub):
                cases.append(Case(prog, [name], 2, ("required", *map(re.escape, required_flags(sub))),
                                  id=f"{prog}-{name}-missing-required", tags={"generic"}))
    return cases


def mismatch_cases() -> list[Case]:
    """Every policy x scenario and algorithm x scenario pair the registries say does not fit, and more."""
    cases = []
    for sc, s in SCENARIOS.items():
        if not s.needs:  # undeclared: test_every_scenario_declares_... fails for it instead
            continue
        valid = [p for p, ps in POLICIES.items() if ps.runs_on(s.needs, s.family)]
        for p, ps in POLICIES.items():
            if ps.runs_on(s.needs, s.family):
                continue
            must = (re.escape(repr(p)), re.escape(sc), "valid policies there: " + re.escape(", ".join(valid)))
            cases.append(Case("emulator", ["run", "--scenario", sc, "--policy", p, *model_args(p)], 2, must,
                              id=f"run-{sc}-{p}", tags={"mismatch"}))
        bad = [p for p, ps in POLICIES.items() if not ps.runs_on(s.needs, s.family)]
        if bad and valid:
            cases.append(Case("emulator", ["compare", "--scenario", sc, "--policies", f"{valid[0]},{bad[0]}"], 2,
                              (re.escape(repr(bad[0])), "valid policies there"), id=f"compare-{sc}-{bad[0]}",
                              tags={"mismatch"}))
        for algo in ALGOS:
            families = _ALGOS[algo].families
            if families and s.family not in families:
                cases.append(Case("emulator", ["train", "--scenario", sc, "--algo", algo, "--out", "{tmp}/train",
                                               "--no-progress"], 2,
                                  (re.escape(repr(algo)), re.escape(repr(sc)), "algorithms for"),
                                  id=f"train-{sc}-{algo}", tags={"mismatch"}))
    for p, ps in POLICIES.items():  # the demo's heartbeats on a locality cluster
        if not ps.runs_on("schedule", "locality"):
            cases.append(Case("policy-engine", ["demo", "--policies", f"fifo,{p}"], 2,
                              (re.escape(repr(p)), "valid policies there: .*fifo"), id=f"demo-{p}",
                              tags={"mismatch"}))
    # model files of another policy, for every policy that takes one
    for p, ps in POLICIES.items():
        if ps.model == "none":
            continue
        for other, path in MODEL_FOR.items():
            if other == p:
                continue
            cases.append(Case("policy-engine", ["serve", "--policy", p, "--model", path, "--port", "0"], 1,
                              (f"is for policy '{other}', not '{p}'",), id=f"serve-{p}-model-of-{other}",
                              tags={"mismatch"}))
            sc = a_scenario_for(p)
            if sc:
                cases.append(Case("emulator", ["run", "--scenario", sc, "--policy", p, "--model", path, *small(sc)],
                                  1, (f"is for policy '{other}', not '{p}'",), id=f"run-{p}-model-of-{other}",
                                  tags={"mismatch"}))
    for p, ps in POLICIES.items():
        if ps.model == "none":
            sc = a_scenario_for(p)
            cases.append(Case("emulator", ["run", "--scenario", sc, "--policy", p, "--model", "{rl_fc_model}"], 2,
                              (f"'{p}' takes no model", "policies that do: .*rl-fc"), id=f"run-{p}-takes-no-model"))
        elif ps.model == "required":
            cases.append(Case("policy-engine", ["serve", "--policy", p], 2, ("needs a model",),
                              id=f"serve-{p}-without-model"))
    return cases


BAD_FILES = {  # placeholder -> (exit code, what the line must say)
    "{missing}": (2, "does not exist"),
    "{directory}": (2, "is a directory"),
    "{empty}": (1, "truncated or corrupt"),
    "{corrupt}": (1, "truncated or corrupt"),
    "{truncated}": (1, "truncated or corrupt"),
    "{text}": (1, "truncated or corrupt"),
    "{plain_safetensors}": (1, "not a readable yarn-rl model|format"),
    "{tampered}": (1, "checksum mismatch"),
}


def file_cases() -> list[Case]:
    cases = []
    for ph, (code, why) in BAD_FILES.items():
        name = ph.strip("{}")
        cases.append(Case("policy-engine", ["serve", "--policy", "rl-fc", "--model", ph, "--port", "0"], code,
                          (why,), id=f"serve-model-{name}", tags={"file"}))
        cases.append(Case("emulator", ["run", "--scenario", "multicluster-uniform", "--policy", "rl-fc", "--model",
                                       ph, *small("multicluster-uniform")], code, (why,),
                          id=f"run-model-{name}", tags={"file"}))
        cases.append(Case("emulator", ["compare", "--scenario", "multicluster-uniform", "--policies", "sf-e,rl-fc",
                                       "--model", f"rl-fc={ph}", *small("multicluster-uniform")], code, (why,),
                          id=f"compare-model-{name}", tags={"file"}))
        cases.append(Case("emulator", ["run", "--scenario", "locality-wordcount", "--policy", "clqlmrs", "--model",
                                       ph, *small("locality-wordcount")], code, (why,),
                          id=f"run-clqlmrs-model-{name}", tags={"file"}))
    cases += [
        Case("emulator", ["compare", "--scenario", "multicluster-uniform", "--policies", "sf-e,rl-fc", "--model",
                          "rl-fc={corrupt}", "--remote", "spawn", *small("multicluster-uniform")], 1,
             ("truncated or corrupt",), id="compare-spawn-corrupt-model"),
        Case("policy-engine", ["serve", "--policy", "clqlmrs", "--model", "{corrupt}", "--port", "0"], 1,
             ("truncated or corrupt",), subprocess=True, id="serve-corrupt-model-process"),
        # training: a file where the output directory goes, checkpoints that are damaged or missing
        Case("emulator", ["train", "--scenario", "multicluster-uniform", "--algo", "rl-fc", "--out", "{text}",
                          "--no-progress"], 2, ("is a file",), id="train-out-is-a-file"),
        Case("emulator", ["train", "--scenario", "multicluster-uniform", "--param", "jobs=10", "--algo", "rl-fc",
                          "--out", "{rl_fc_corrupt_run}", "--resume", "--no-progress"], 1,
             ("checkpoint .* cannot be read",), id="train-rl-fc-resume-corrupt-checkpoint"),
        Case("emulator", ["train", "--scenario", "multicluster-uniform", "--param", "jobs=10", "--algo", "rl-fc",
                          "--out", "{rl_fc_corrupt_run}", "--no-progress"], 1,
             ("already holds a training run", "--resume"), id="train-rl-fc-existing-run-without-resume"),
        Case("emulator", ["train", "--scenario", "locality-wordcount", "--algo", "clqlmrs", "--out", "{text}/run",
                          "--episodes", "1", "--no-progress"], 1, ("cannot write the run to --out", "Not a directory"),
             id="train-out-under-a-file"),
        Case("emulator", ["train", "--scenario", "multicluster-uniform", "--algo", "rl-fc", "--out", "{tmp}/none",
                          "--resume", "--no-progress"], 1, ("--resume: no checkpoint",),
             id="train-rl-fc-resume-nothing"),
        Case("emulator", ["train", "--scenario", "locality-wordcount", "--algo", "clqlmrs", "--out",
                          "{clqlmrs_corrupt_run}", "--resume", "--no-progress"], 1,
             ("cannot resume", "truncated or corrupt"), id="train-clqlmrs-resume-corrupt-checkpoint"),
    ]
    return cases


def remote_cases() -> list[Case]:
    cases = []
    remotes = {"{closed}": ("UNAVAILABLE|refused",), "{silent_tcp}": ("no policy engine|DEADLINE",),
               "{hangup_tcp}": ("no policy engine|UNAVAILABLE",), "{http}": ("no policy engine|UNAVAILABLE",)}
    for ph, why in remotes.items():
        name = ph.strip("{}")
        cases.append(Case("emulator", ["run", "--scenario", "multicluster-uniform", "--policy", "sf-e", "--remote", ph,
                                       "--timeout", "1", *small("multicluster-uniform")], 1,
                          (ph, *why), limit_s=4.0, subprocess=True, id=f"run-remote-{name}",
                          tags={"remote"}))
        cases.append(Case("policy-engine", ["info", "--target", ph, "--timeout", "1"], 1, (ph, *why),
                          limit_s=4.0, subprocess=name in ("closed", "http"), id=f"info-{name}", tags={"remote"}))
    cases += [
        # the case, with the default --timeout (5 s)
        Case("emulator", ["run", "--scenario", "multicluster-uniform", "--policy", "sf-e", "--remote", "127.0.0.1:1",
                          "--no-progress"], 1, ("127.0.0.1:1", "after 5s"), limit_s=8.0, subprocess=True,
             id="run-remote-default-timeout", tags={"remote"}),
        Case("emulator", ["run", "--scenario", "multicluster-uniform", "--policy", "sf-e", "--remote", "{engine_lf_e}",
                          *small("multicluster-uniform")], 1, ("serves policy 'lf-e', not 'sf-e'",), limit_s=8.0,
             id="run-remote-other-policy", tags={"remote"}),
        Case("emulator", ["run", "--scenario", "multicluster-uniform", "--policy", "rl-fc", "--remote",
                          "{engine_lf_e}", "--model", "{rl_fc_model}"], 2, ("--model is for in-process",),
             id="run-remote-with-model"),
        Case("emulator", ["run", "--scenario", "multicluster-uniform", "--policy", "sf-e", "--remote", "nonsense"], 2,
             ("not HOST:PORT",), id="run-remote-not-host-port"),
        Case("emulator", ["run", "--scenario", "multicluster-uniform", "--policy", "sf-e", "--remote",
                          "127.0.0.1:99999"], 2, ("not HOST:PORT",), id="run-remote-port-out-of-range"),
        Case("emulator", ["run", "--scenario", "multicluster-uniform", "--policy", "sf-e", "--remote", "{closed}",
                          "--timeout", "0"], 2, ("--timeout must be a positive",), id="run-timeout-zero"),
        Case("emulator", ["compare", "--scenario", "multicluster-uniform", "--policies", "sf-e", "--remote",
                          "{closed}"], 2, ("takes only 'spawn'",), id="compare-remote-not-spawn"),
        Case("emulator", ["compare", "--scenario", "multicluster-uniform", "--policies", "sf-e", "--remote", "spawn",
                          "--timeout", "-1"], 2, ("--timeout must be a positive",), id="compare-timeout-negative"),
        Case("policy-engine", ["info", "--target", "{closed}", "--timeout", "0"], 2, ("--timeout must be a positive",),
             id="info-timeout-zero"),
        Case("policy-engine", ["info", "--target", "{closed}", "--timeout", "-1"], 2,
             ("--timeout must be a positive",), id="info-timeout-negative"),
        Case("policy-engine", ["info", "--target", "nonsense"], 2, ("not HOST:PORT",), id="info-target-not-host-port"),
        Case("policy-engine", ["serve", "--policy", "fifo", "--port", "{busy_port}"], 1,
             ("cannot serve", "already in use", "--port 0"),
             limit_s=10.0, subprocess=True, id="serve-port-in-use"),
        Case("policy-engine", ["serve", "--policy", "fifo", "--port", "0", "--metrics-port", "{busy_port}"], 1,
             ("cannot serve", "in use"), limit_s=10.0, id="serve-metrics-port-in-use"),
    ]
    return cases


def value_cases() -> list[Case]:
    """Out-of-range values, unknown keys, malformed KEY=VALUE."""
    cases = []
    for sc in SCENARIOS:  # an unknown --param for every scenario, with what the scenario does take
        p = a_policy_for(sc)
        if p is None:
            continue
        cases.append(Case("emulator", ["run", "--scenario", sc, "--policy", p, "--param", "no_such_param=1"], 2,
                          (re.escape(sc), "no_such_param", "parameters"), id=f"run-{sc}-unknown-param",
                          tags={"value"}))
    for p, ps in POLICIES.items():  # an unknown --set for every policy, with the options it does take
        if ps.model == "required" and p not in MODEL_FOR:
            continue
        args = ["--model", MODEL_FOR[p]] if ps.model == "required" else []
        cases.append(Case("policy-engine", ["serve", "--policy", p, *args, "--set", "no_such_option=1", "--port", "0"],
                          2, (re.escape(repr(p)), "no_such_option", "valid|options:"), id=f"serve-{p}-unknown-option",
                          tags={"value"}))
    for algo in ALGOS:  # an unknown --set for every training algorithm
        families = _ALGOS[algo].families
        sc = next(n for n, s in SCENARIOS.items() if not families or s.family in families)
        cases.append(Case("emulator", ["train", "--scenario", sc, "--algo", algo, "--out", "{tmp}/t-" + algo,
                                       "--set", "no_such_option=1", "--no-progress"], 2,
                          ("no_such_option", "valid"), id=f"train-{algo}-unknown-option", tags={"value"}))
    run = ["run", "--scenario"]
    cases += [
        Case("emulator", [*run, "no-such-scenario", "--policy", "fifo"], 2, ("valid scenarios: .*deeprm",),
             id="run-unknown-scenario"),
        Case("emulator", [*run, "locality-wordcount", "--policy", "fifo", "--param", "remote_read_mb_s=0"], 2,
             ("remote_read_mb_s", "positive"), id="run-locality-remote-read-rate-not-positive", tags={"value"}),
        Case("emulator", [*run, "deeprm", "--policy", "no-such-policy"], 2, ("registered policies: .*sjf",),
             id="run-unknown-policy"),
        Case("emulator", ["compare", "--scenario", "no-such-scenario"], 2, ("valid scenarios",),
             id="compare-unknown-scenario"),
        Case("emulator", ["train", "--scenario", "no-such", "--algo", "rl-fc", "--out", "{tmp}/x"], 2,
             ("valid scenarios",), id="train-unknown-scenario"),
        Case("emulator", ["train", "--scenario", "deeprm", "--algo", "no-such-algo", "--out", "{tmp}/x"], 2,
             ("unknown training algorithm", "available: .*rl-fc"), id="train-unknown-algo"),
        Case("emulator", ["train", "--scenario", "deeprm", "--algo", "deeprm-pg", "--out", "{tmp}/dr-init", "--set",
                          "init={tmp}/no-such.safetensors", "--no-progress"], 1, ("no-such.safetensors", "cannot read"),
             limit_s=60.0, id="train-deeprm-pg-init-missing"),
        Case("emulator", ["train", "--scenario", "deeprm", "--algo", "deeprm-pg", "--out", "{tmp}/dr-two", "--set",
                          "init=x.safetensors", "--set", "imitate=sjf", "--no-progress"], 2, ("give one",),
             id="train-deeprm-pg-two-warm-starts"),
        Case("emulator", ["train", "--scenario", "deeprm", "--algo", "deeprm-pg", "--out", "{tmp}/dr-rounds", "--set",
                          "imitate_rounds=0", "--no-progress"], 2, ("imitate_rounds must be >= 1",),
             id="train-deeprm-pg-imitate-rounds-zero"),
        Case("emulator", ["train", "--scenario", "deeprm", "--algo", "deeprm-pg", "--out", "{tmp}/dr-opt", "--set",
                          "optimizer=sgd", "--no-progress"], 2, ("optimizer must be adam or rmsprop",),
             id="train-deeprm-pg-unknown-optimizer"),
        Case("emulator", ["train", "--scenario", "deeprm", "--algo", "deeprm-pg", "--out", "{tmp}/dr-ent", "--set",
                          "entropy_coef=-0.1", "--no-progress"], 2, ("entropy_coef and entropy_decay must be >= 0",),
             id="train-deeprm-pg-negative-entropy"),
        Case("emulator", [*run, "deeprm", "--policy", "sjf", "--episodes", "0"], 2, ("--episodes must be",),
             id="run-episodes-zero"),
        Case("emulator", [*run, "deeprm", "--policy", "sjf", "--episodes", "-3"], 2, ("--episodes must be",),
             id="run-episodes-negative"),
        Case("emulator", [*run, "deeprm", "--policy", "sjf", "--episodes", "two"], 2, ("invalid int value",),
             id="run-episodes-not-a-number"),
        Case("emulator", [*run, "deeprm", "--policy", "sjf", "--seed", "-1"], 2, ("--seed must be",),
             id="run-seed-negative"),
        Case("emulator", [*run, "deeprm", "--policy", "sjf", "--param", "load"], 2, ("--param takes KEY=VALUE",),
             id="run-param-without-value"),
        Case("emulator", [*run, "deeprm", "--policy", "sjf", "--param", "=1"], 2, ("--param takes KEY=VALUE",),
             id="run-param-without-key"),
        Case("emulator", [*run, "deeprm", "--policy", "sjf", "--param", "load=5"], 2, ("load must be in",),
             id="run-deeprm-load-out-of-range"),
        Case("emulator", [*run, "deeprm", "--policy", "sjf", "--param", "res_slot=1000"], 2, ("res_slot must be",),
             id="run-deeprm-res-slot-out-of-range"),
        Case("emulator", [*run, "deeprm", "--policy", "sjf", "--param", "simu_len=0"], 2, ("simu_len must be",),
             id="run-deeprm-simu-len-zero"),
        Case("emulator", [*run, "locality-wordcount", "--policy", "fifo", "--param", "cache_gb=-1"], 2,
             ("cache_gb must be",), id="run-locality-cache-negative"),
        Case("emulator", [*run, "locality-wordcount", "--policy", "fifo", "--param", "block_mb=100"], 2,
             ("block_mb must be one of",), id="run-locality-block-size"),
        Case("emulator", [*run, "locality-wordcount", "--policy", "fifo", "--param", "maps=abc"], 2,
             ("maps",), id="run-locality-maps-not-a-number"),
        Case("emulator", [*run, "locality-join", "--policy", "fifo", "--param", "size=tiny"], 2,
             ("no HiBench input sizes",), id="run-locality-join-size"),
        Case("emulator", [*run, "multicluster-uniform", "--policy", "sf-e", "--param", "jobs=0"], 2,
             ("jobs must be at least 1",), id="run-multicluster-jobs-zero"),
        Case("emulator", [*run, "multicluster-uniform", "--policy", "sf-e", "--param", "demand_scale=-1"], 2,
             ("demand_scale must be positive",), id="run-multicluster-demand-negative"),
        Case("emulator", [*run, "hetero-elastic-uniform", "--policy", "maf", "--param", "b=x"], 2,
             ("must be a number",), id="run-hetero-b-not-a-number"),
        Case("emulator", [*run, "locality-wordcount", "--policy", "fifo", "--timeout", "soon"], 2,
             ("invalid float value",), id="run-timeout-not-a-number"),
        # compare's own arguments
        Case("emulator", ["compare", "--scenario", "deeprm", "--policies", ","], 2, ("names no policy",),
             id="compare-empty-policies"),
        Case("emulator", ["compare", "--scenario", "deeprm", "--policies", "sjf,packer", "--against", "fifo"], 2,
             ("--against 'fifo' is not among",), id="compare-against-not-compared"),
        Case("emulator", ["compare", "--scenario", "multicluster-uniform", "--policies", "sf-e", "--model",
                          "rl-fc={rl_fc_model}"], 2, ("not among --policies",), id="compare-model-other-policy"),
        Case("emulator", ["compare", "--scenario", "multicluster-uniform", "--policies", "rl-fc", "--model",
                          "{rl_fc_model}"], 2, ("--model takes POLICY=PATH",), id="compare-model-without-policy"),
        Case("emulator", ["compare", "--scenario", "multicluster-uniform", "--policies", "sf-e,rl-fc",
                          *small("multicluster-uniform")], 2, ("'rl-fc' needs a model",),
             id="compare-learned-without-model"),
        # policy options: out of range, not numbers, malformed (in-process run and serve)
        Case("emulator", [*run, "locality-wordcount", "--policy", "delay", "--set", "node_locality_delay=-1"], 2,
             ("unrecognized arguments: --set",), id="run-has-no-set"),
        Case("policy-engine", ["serve", "--policy", "delay", "--set", "node_locality_delay=-1", "--port", "0"], 2,
             ("node_locality_delay must be >= 0",), id="serve-delay-negative"),
        Case("policy-engine", ["serve", "--policy", "delay", "--set", "node_locality_delay=soon", "--port", "0"], 2,
             ("node_locality_delay takes a finite number",), id="serve-delay-not-a-number"),
        Case("policy-engine", ["serve", "--policy", "acl", "--set", "c=NaN", "--port", "0"], 2,
             ("c takes a finite number",), id="serve-acl-nan"),
        Case("policy-engine", ["serve", "--policy", "clqlmrs", "--set", "alpha=5", "--port", "0"], 2,
             ("alpha",), id="serve-clqlmrs-alpha-out-of-range"),
        Case("policy-engine", ["serve", "--policy", "clqlmrs", "--set", "order=random", "--port", "0"], 2,
             ("order must be",), id="serve-clqlmrs-order"),
        Case("policy-engine", ["serve", "--policy", "sjf", "--set", "num_slots=0", "--port", "0"], 2,
             ("num_slots must be",), id="serve-sjf-slots-zero"),
        Case("policy-engine", ["serve", "--policy", "fifo", "--set", "node_locality_delay", "--port", "0"], 2,
             ("--set takes KEY=VALUE",), id="serve-set-without-value"),
        Case("policy-engine", ["serve", "--policy", "no-such-policy"], 2, ("registered policies: .*fifo",),
             subprocess=True, id="serve-unknown-policy"),
        Case("policy-engine", ["serve", "--policy", "fifo", "--port", "70000"], 2, ("--port 70000 is not a TCP port",),
             id="serve-port-out-of-range"),
        Case("policy-engine", ["serve", "--policy", "fifo", "--port", "-1"], 2, ("is not a TCP port",),
             id="serve-port-negative"),
        Case("policy-engine", ["serve", "--policy", "fifo", "--metrics-port", "65536"], 2,
             ("--metrics-port 65536 is not a TCP port",), id="serve-metrics-port-out-of-range"),
        Case("policy-engine", ["serve", "--policy", "fifo", "--port", "5000", "--metrics-port", "5000"], 2,
             ("is the gRPC --port too",), id="serve-metrics-port-same"),
        Case("policy-engine", ["serve", "--policy", "fifo", "--grace", "-1"], 2, ("--grace must be",),
             id="serve-grace-negative"),
        Case("policy-engine", ["serve", "--policy", "fifo", "--webhdfs", "namenode:9870"], 2,
             ("--webhdfs takes http",), id="serve-webhdfs-not-a-url"),
        Case("policy-engine", ["serve", "--policy", "fifo", "--webhdfs", "http://127.0.0.1:9870", "--webhdfs-ttl",
                               "0"], 2, ("--webhdfs-ttl must be a positive",), id="serve-webhdfs-ttl-zero"),
        Case("policy-engine", ["serve", "--policy", "fifo", "--host", "192.0.2.1", "--port", "0"], 1,
             ("cannot serve",), limit_s=10.0, id="serve-host-not-ours"),
        # training hyper-parameters out of range
        Case("emulator", ["train", "--scenario", "multicluster-uniform", "--algo", "rl-fc", "--out", "{tmp}/e",
                          "--set", "eps2=5", "--no-progress"], 2, ("eps2",), id="train-rl-fc-eps2-out-of-range"),
        Case("emulator", ["train", "--scenario", "multicluster-uniform", "--algo", "rl-fc", "--out", "{tmp}/e",
                          "--set", "lr=fast", "--no-progress"], 2, ("lr",), id="train-rl-fc-lr-not-a-number"),
        Case("emulator", ["train", "--scenario", "multicluster-uniform", "--algo", "rl-fc", "--out", "{tmp}/e",
                          "--set", "hidden=a,b", "--no-progress"], 2, ("hidden",), id="train-rl-fc-hidden-garbage"),
        Case("emulator", ["train", "--scenario", "locality-wordcount", "--algo", "clqlmrs", "--out", "{tmp}/c",
                          "--set", "alpha=5", "--no-progress"], 2, ("alpha",), id="train-clqlmrs-alpha-out-of-range"),
        Case("emulator", ["train", "--scenario", "locality-wordcount", "--algo", "clqlmrs", "--out", "{tmp}/c",
                          "--set", "mode=fancy", "--no-progress"], 2, ("mode",), id="train-clqlmrs-mode"),
        Case("emulator", ["train", "--scenario", "locality-wordcount", "--algo", "clqlmrs", "--out", "{tmp}/c",
                          "--episodes", "0", "--no-progress"], 2, ("--episodes must be",), id="train-episodes-zero"),
        Case("policy-engine", ["serve", "--policy", "fifo", "--model", "{rl_fc_model}"], 2,
             ("'fifo' takes no model",), id="serve-fifo-takes-no-model"),
        Case("emulator", [*run, "multicluster-uniform", "--policy", "rl-fc", "--model", "{corrupt}", "--remote",
                          "spawn", *small("multicluster-uniform")], 1, ("truncated or corrupt",),
             id="run-spawn-corrupt-model"),
        Case("emulator", ["compare", "--scenario", "deeprm", "--episodes", "0"], 2, ("--episodes must be",),
             id="compare-episodes-zero"),
        Case("emulator", ["train", "--scenario", "locality-wordcount", "--algo", "clqlmrs", "--out", "{tmp}/c",
                          "--seed", "-1", "--no-progress"], 2, ("--seed must be",), id="train-seed-negative"),
        # the demo and the listings
        Case("policy-engine", ["demo", "--policies", ""], 2, ("names no policy",), id="demo-no-policies"),
        Case("policy-engine", ["demo", "--policies", "fifo,no-such"], 2, ("registered policies",),
             id="demo-unknown-policy"),
        Case("policy-engine", ["policies", "extra"], 2, ("unrecognized arguments: extra",), id="policies-extra-arg"),
        Case("emulator", ["scenarios", "extra"], 2, ("unrecognized arguments: extra",), id="scenarios-extra-arg"),
        # the three cases, as the user typed them, as real processes
        Case("emulator", ["run", "--scenario", "locality-wordcount", "--policy", "sf-e"], 2,
             ("'sf-e' routes jobs to clusters", "valid policies there: .*delay"), subprocess=True,
             id="issue-run-route-policy-on-heartbeats"),
        Case("emulator", ["train", "--scenario", "deeprm", "--algo", "rl-fc", "--out", "{tmp}/issue"], 2,
             ("'rl-fc' trains on multicluster scenarios", "'deeprm' is deeprm"), subprocess=True,
             id="issue-train-rl-fc-on-deeprm"),
    ]
    return cases + security_and_reload_cases()


def security_and_reload_cases() -> list[Case]:
    """serve --tls-* / --token-file / --watch and info's client side (issue 17); part of value_cases()."""
    serve = ["serve", "--policy", "fifo", "--port", "0"]
    info = ["info", "--target", "{engine_lf_e}", "--timeout", "3"]
    return [
        Case("policy-engine", [*serve, "--tls-cert", "{missing}", "--tls-key", "{missing}"], 2,
             ("--tls-cert .*does not exist",), id="serve-tls-cert-missing"),
        Case("policy-engine", [*serve, "--tls-cert", "{text}", "--tls-key", "{text}"], 2,
             ("--tls-cert .*(not a PEM certificate|no PEM certificate)",), id="serve-tls-cert-not-pem"),
        Case("policy-engine", [*serve, "--tls-cert", "{ca}", "--tls-key", "{text}"], 2,
             ("--tls-key .*not a PEM private key",), id="serve-tls-key-not-pem"),
        Case("policy-engine", [*serve, "--tls-cert", "{server_cert}", "--tls-key", "{ca_key}"], 2,
             ("--tls-key .* is not the key of --tls-cert",), id="serve-tls-key-of-another-cert"),
        Case("policy-engine", [*serve, "--tls-key", "{text}"], 2, ("--tls-cert and --tls-key go together",),
             id="serve-tls-key-alone"),
        Case("policy-engine", [*serve, "--tls-client-ca", "{ca}"], 2, ("--tls-client-ca .*needs --tls-cert",),
             id="serve-tls-client-ca-without-cert"),
        Case("policy-engine", [*serve, "--tls-cert", "{server_cert}", "--tls-key", "{server_key}",
                               "--tls-client-ca", "{text}"], 2, ("--tls-client-ca .*PEM certificate",),
             id="serve-tls-client-ca-not-pem"),
        Case("policy-engine", [*serve, "--token-file", "{missing}"], 2, ("--token-file .*does not exist",),
             subprocess=True, id="serve-token-file-missing"),
        Case("policy-engine", [*serve, "--token-file", "{empty}"], 2, ("--token-file .* is empty",),
             id="serve-token-file-empty"),
        Case("policy-engine", [*serve, "--token-file", "{directory}"], 2, ("--token-file .* is a directory",),
             id="serve-token-file-directory"),
        Case("policy-engine", [*serve, "--token-file", "{corrupt}"], 2, ("--token-file .*(not ASCII|bytes)",),
             id="serve-token-file-binary"),
        Case("policy-engine", [*serve, "--watch"], 2, ("--watch reloads the --model file",), id="serve-watch-no-model"),
        Case("policy-engine", ["serve", "--policy", "clqlmrs", "--model", "{clqlmrs_model}", "--port", "0", "--watch",
                               "--watch-interval", "0"], 2, ("--watch-interval must be a positive",),
             id="serve-watch-interval-zero"),
        Case("policy-engine", [*info, "--tls-cert", "{server_cert}"], 2, ("go together",), id="info-tls-cert-alone"),
        Case("policy-engine", [*info, "--tls-cert", "{server_cert}", "--tls-key", "{server_key}"], 2,
             ("give the server's CA too",), id="info-tls-cert-without-ca"),
        Case("policy-engine", [*info, "--tls-ca", "{missing}"], 2, ("--tls-ca .*does not exist",),
             id="info-tls-ca-missing"),
        Case("policy-engine", [*info, "--tls-ca", "{text}"], 2, ("--tls-ca .*PEM certificate",),
             id="info-tls-ca-not-pem"),
        Case("policy-engine", [*info, "--token-file", "{empty}"], 2, ("--token-file .* is empty",),
             id="info-token-file-empty"),
        Case("policy-engine", [*info, "--tls-ca", "{ca}"], 1, ("UNAVAILABLE", "does not speak TLS here"),
             limit_s=10.0, id="info-tls-to-a-plaintext-engine"),
        Case("policy-engine", ["info", "--target", "{engine_tls}", "--timeout", "3"], 1,
             ("UNAVAILABLE", "it may serve TLS"), limit_s=10.0, id="info-plaintext-to-a-tls-engine"),
        Case("policy-engine", ["info", "--target", "{engine_tls}", "--timeout", "3", "--tls-ca", "{ca}"], 1,
             ("UNAUTHENTICATED", "--token-file"), limit_s=10.0, id="info-without-token"),
    ]


def decision_log_cases() -> list[Case]:
    """--decision-log, --log-rotate-mb and `emulator replay` (issue 18)."""
    run = ["run", "--scenario", "locality-wordcount", "--policy", "fifo"]
    replay = ["replay", "--log"]
    return [
        Case("policy-engine", ["serve", "--policy", "fifo", "--port", "0", "--decision-log", "{text}"], 2,
             ("--decision-log .* is a file",), id="serve-decision-log-is-a-file"),
        Case("policy-engine", ["serve", "--policy", "fifo", "--port", "0", "--log-rotate-mb", "5"], 2,
             ("--log-rotate-mb needs --decision-log",), id="serve-rotate-without-log"),
        Case("policy-engine", ["serve", "--policy", "fifo", "--port", "0", "--decision-log", "{tmp}/dl",
                               "--log-rotate-mb", "0"], 2, ("--log-rotate-mb must be a positive",),
             id="serve-rotate-zero"),
        Case("policy-engine", ["serve", "--policy", "fifo", "--port", "0", "--decision-log", "{text}/sub"], 1,
             ("cannot create --decision-log",), id="serve-decision-log-under-a-file"),
        Case("emulator", [*run, "--decision-log", "{text}"], 2, ("--decision-log .* is a file",),
             id="run-decision-log-is-a-file"),
        Case("emulator", [*run, "--log-rotate-mb", "-1", "--decision-log", "{tmp}/dl"], 2,
             ("--log-rotate-mb must be a positive",), id="run-rotate-negative"),
        Case("emulator", [*run, "--remote", "127.0.0.1:1", "--decision-log", "{tmp}/dl"], 2,
             ("writes its own log",), id="run-remote-decision-log"),
        Case("emulator", ["compare", "--scenario", "locality-wordcount", "--policies", "fifo", "--log-rotate-mb", "1"],
             2, ("--log-rotate-mb needs --decision-log",), id="compare-rotate-without-log"),
        Case("emulator", [*replay, "{tmp}/no-such-log", "--policies", "fifo"], 2, ("is not a directory",),
             id="replay-log-missing"),
        Case("emulator", [*replay, "{tmp}", "--policies", "fifo"], 1, ("no decisions-.*parquet files",),
             id="replay-log-empty"),
        Case("emulator", [*replay, "{tmp}", "--policies", ","], 2, ("names no policy",), id="replay-no-policies"),
        Case("emulator", [*replay, "{tmp}", "--policies", "fifo,no-such"], 2, ("registered policies",),
             id="replay-unknown-policy"),
        Case("emulator", [*replay, "{tmp}", "--policies", "fifo,fifo"], 2, ("names a policy twice",),
             id="replay-policy-twice"),
        Case("emulator", [*replay, "{tmp}", "--policies", "fifo", "--model", "clqlmrs={clqlmrs_model}"], 2,
             ("not among --policies",), id="replay-model-other-policy"),
        Case("emulator", [*replay, "{tmp}", "--policies", "clqlmrs", "--model", "clqlmrs={missing}"], 2,
             ("no-such-model",), id="replay-model-missing"),
        Case("emulator", [*replay, "{tmp}", "--policies", "fifo", "--limit", "0"], 2, ("--limit must be",),
             id="replay-limit-zero"),
        Case("emulator", ["replay", "--policies", "fifo"], 2, ("required: --log",), id="replay-without-log"),
        Case("emulator", ["train", "--scenario", "locality-wordcount", "--algo", "clqlmrs", "--out", "{tmp}/fl",
                          "--from-log", "{tmp}/no-such-log"], 2, ("--from-log .* is not a directory",),
             id="train-from-log-missing"),
        Case("emulator", ["train", "--scenario", "locality-wordcount", "--algo", "clqlmrs", "--out", "{tmp}/fl",
                          "--from-log", "{tmp}", "--resume"], 2, ("--resume is for online",),
             id="train-from-log-resume"),
        Case("emulator", ["train", "--scenario", "locality-wordcount", "--algo", "clqlmrs", "--out", "{tmp}/fl",
                          "--from-log", "{tmp}", "--compare-model", "{missing}"], 2, ("no-such-model",),
             id="train-from-log-compare-missing"),
        Case("emulator", ["train", "--scenario", "locality-wordcount", "--algo", "clqlmrs", "--out", "{tmp}/fl",
                          "--from-log", "{tmp}"], 1, ("no decisions-.*parquet",), id="train-from-log-empty"),
    ]


def calibration_cases() -> list[Case]:
    """`emulator calibrate` and `--calibration FILE` (the fit's own refusals are in tests/test_calibration.py)."""
    return [
        Case("emulator", ["calibrate", "--out", "{tmp}/cal.json"], 2, ("required: --runs",), id="calibrate-no-runs"),
        Case("emulator", ["calibrate", "--runs", "{missing}", "--out", "{tmp}/cal.json"], 2, ("does not exist",),
             id="calibrate-missing-runs"),
        Case("emulator", ["calibrate", "--runs", "{text}", "--out", "{tmp}/cal.json"], 1,
             ("not a real_locality results file",),
             id="calibrate-text-runs"),
        Case("emulator", ["run", "--scenario", "locality-wordcount", "--policy", "fifo", "--calibration",
                          "{missing}"], 2, ("does not exist",), id="run-calibration-missing"),
        Case("emulator", ["run", "--scenario", "locality-wordcount", "--policy", "fifo", "--calibration",
                          "{text}"], 2, ("is not a calibration file",), id="run-calibration-text"),
    ]


CASES = (generic_cases() + mismatch_cases() + file_cases() + remote_cases() + value_cases()
         + decision_log_cases() + calibration_cases())


# ---------------------------------------------------------------------------------------------------------------
# Fixtures: the bad files, listeners that are not engines, and one real engine.

def _listener(kind: str, stop: threading.Event) -> tuple[socket.socket, int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    if kind == "hangup":  # accepts and closes at once
        def loop():
            srv.settimeout(0.2)
            while not stop.is_set():
                try:
                    conn, _ = srv.accept()
                    conn.close()
                except OSError:
                    pass
        threading.Thread(target=loop, daemon=True).start()
    return srv, srv.getsockname()[1]  # "silent": the kernel accepts, nobody ever answers


class _Http(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"not grpc\n")

    do_POST = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def env(tmp_path_factory, engine_factory):
    from algorithms.clqlmrs.policy import ClqlmrsPolicy

    tmp = tmp_path_factory.mktemp("sweep")
    real = Path(RL_FC_MODEL).read_bytes()
    (tmp / "empty.safetensors").write_bytes(b"")
    (tmp / "corrupt.safetensors").write_bytes(np.random.default_rng(0).bytes(4096))
    (tmp / "truncated.safetensors").write_bytes(real[: len(real) // 2])
    (tmp / "model.json").write_text('{"policy": "rl-fc"}\n')
    (tmp / "a-directory.safetensors").mkdir()
    from safetensors.numpy import save_file

    save_file({"w": np.zeros(3, np.float32)}, str(tmp / "plain.safetensors"))
    tampered = bytearray(real)
    tampered[-1] ^= 0xFF  # the last weight byte
    (tmp / "tampered.safetensors").write_bytes(bytes(tampered))
    ClqlmrsPolicy(learn=False).save(tmp / "clqlmrs.safetensors", {"episodes": 0})
    for run, name in (("rl_fc_corrupt_run", "checkpoint.pt"), ("clqlmrs_corrupt_run", "checkpoint.safetensors")):
        (tmp / run).mkdir()
        (tmp / run / name).write_bytes(b"\x00garbage" * 64)
    stop = threading.Event()
    silent, silent_port = _listener("silent", stop)
    hangup, hangup_port = _listener("hangup", stop)
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Http)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    closed = socket.socket()  # a port nobody listens on: bound, never listening
    closed.bind(("127.0.0.1", 0))
    engine = engine_factory("lf-e")
    from certs import CertFactory
    from policy_engine.security import ClientSecurity

    certs = CertFactory(tmp / "pki")
    ca = certs.ca()
    server = certs.leaf("server", ca, server=True)
    (tmp / "token").write_text("sweep-token\n")
    tls_engine = engine_factory("fifo", "--tls-cert", server.cert, "--tls-key", server.key, "--token-file",
                                str(tmp / "token"), security=ClientSecurity(ca=ca[0].cert, token="sweep-token"))
    values = {
        "tmp": str(tmp), "missing": str(tmp / "no-such-model.safetensors"),
        "directory": str(tmp / "a-directory.safetensors"),
        "empty": str(tmp / "empty.safetensors"), "corrupt": str(tmp / "corrupt.safetensors"),
        "truncated": str(tmp / "truncated.safetensors"), "text": str(tmp / "model.json"),
        "plain_safetensors": str(tmp / "plain.safetensors"), "tampered": str(tmp / "tampered.safetensors"),
        "rl_fc_model": RL_FC_MODEL, "clqlmrs_model": str(tmp / "clqlmrs.safetensors"),
        "rl_fc_corrupt_run": str(tmp / "rl_fc_corrupt_run"), "clqlmrs_corrupt_run": str(tmp / "clqlmrs_corrupt_run"),
        "closed": f"127.0.0.1:{closed.getsockname()[1]}", "silent_tcp": f"127.0.0.1:{silent_port}",
        "hangup_tcp": f"127.0.0.1:{hangup_port}", "http": f"127.0.0.1:{httpd.server_address[1]}",
        "busy_port": str(busy.getsockname()[1]), "engine_lf_e": engine.target, "engine_tls": tls_engine.target,
        "ca": ca[0].cert, "ca_key": ca[0].key, "server_cert": server.cert, "server_key": server.key,
    }
    yield values
    stop.set()
    httpd.shutdown()
    for s in (silent, hangup, busy, closed):
        s.close()
    shutil.rmtree(tmp, ignore_errors=True)


def fill(case: Case, env: dict[str, str]) -> tuple[list[str], tuple[str, ...]]:
    def sub(text: str) -> str:
        return re.sub(r"\{(\w+)\}", lambda m: env.get(m.group(1), m.group(0)), text)

    return [sub(a) for a in case.argv], tuple(sub(m) for m in case.must)


def check_line(case: Case, code: int, stderr: str, elapsed: float, must: tuple[str, ...], where: str) -> None:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert "Traceback" not in stderr, f"{where}: traceback:\n{stderr}"
    assert len(lines) == 1, f"{where}: {len(lines)} lines on stderr, want 1:\n{stderr}"
    line = lines[0]
    assert line.startswith(f"{case.prog}"), f"{where}: line does not name the program: {line}"
    assert "internal error" not in line, f"{where}: an unhandled exception: {line}"
    assert code == case.code, f"{where}: exit {code}, want {case.code}: {line}"
    for pattern in must:
        assert re.search(pattern, line), f"{where}: {pattern!r} not in: {line}"
    assert elapsed <= case.limit_s, f"{where}: took {elapsed:.1f}s, bound {case.limit_s}s: {line}"


@pytest.fixture()
def alarm():
    """An in-process case that would block (a `serve` that started after all) fails instead of hanging."""
    def expired(*_):
        raise TimeoutError("in-process case did not finish within 60 s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_in_process(case: Case, env, capfd, alarm):
    argv, must = fill(case, env)
    capfd.readouterr()
    t0 = time.monotonic()
    try:
        PROGRAMS[case.prog].main(argv)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    elapsed = time.monotonic() - t0
    check_line(case, code, capfd.readouterr().err, elapsed, must, f"{case.prog} {' '.join(argv)}")


PROCESS_CASES = [c for c in CASES if c.subprocess]


@pytest.mark.parametrize("case", PROCESS_CASES, ids=[c.id for c in PROCESS_CASES])
def test_as_a_process(case: Case, env):
    argv, must = fill(case, env)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", MODULES[case.prog], *argv], capture_output=True, text=True,
                       timeout=case.limit_s + PROCESS_START_S + 30, env={**os.environ, DEBUG_ENV: ""})
    elapsed = time.monotonic() - t0
    bound = Case(case.prog, case.argv, case.code, limit_s=case.limit_s + PROCESS_START_S)
    check_line(bound, r.returncode, r.stderr, elapsed, must, f"{case.prog} {' '.join(argv)} (process)")
    assert not any("Traceback" in s for s in (r.stdout,)), r.stdout


def test_every_command_of_both_programs_has_its_own_cases():
    """Commands come from the parsers: one added later (e.g. `emulator replay`) fails here until it has cases."""
    for prog in PROGRAMS:
        commands = set(subcommands(prog))
        assert commands, prog
        own = {c.command for c in CASES if c.prog == prog and "generic" not in c.tags}
        missing = sorted(commands - own)
        assert not missing, f"{prog} commands without sweep cases of their own: {missing}"
    expected = {"policy-engine": {"serve", "policies", "info", "demo"},
                "emulator": {"scenarios", "run", "compare", "train"}}
    for prog, names in expected.items():
        assert names <= set(subcommands(prog))


def test_every_scenario_declares_its_family_and_what_it_asks_policies():
    for name, s in SCENARIOS.items():
        assert s.family, f"scenario {name} has no family"
        assert s.needs in ("schedule", "route"), f"scenario {name} does not say which policy calls it makes"


def test_every_training_algorithm_declares_the_scenario_families_it_trains_on():
    """`emulator train` checks the pair before training; an algorithm that declares nothing would skip the check."""
    for algo in ALGOS:
        families = _ALGOS[algo].families
        assert families, f"register_algo({algo!r}, ..., families={{...}}) is missing"
        assert families <= {s.family for s in SCENARIOS.values()}, (algo, families)


def test_the_sweep_forms_the_mismatched_pairs():
    """At least the pairs the issue names, and every schedule-vs-route pair the registries hold."""
    ids = {c.id for c in CASES}
    assert {"run-locality-wordcount-sf-e", "train-deeprm-rl-fc"} <= ids
    for sc, s in SCENARIOS.items():
        wrong = ROUTE_POLICIES if s.needs == "schedule" else SCHEDULE_POLICIES
        assert all(f"run-{sc}-{p}" in ids for p in wrong), sc


# ---------------------------------------------------------------------------------------------------------------
# Internal errors: one line that says it is a bug; the traceback with --debug or YARNRL_DEBUG=1.

def _boom(args):
    raise RuntimeError("boom\nsecond line")


def test_an_internal_error_is_one_line_and_the_traceback_is_behind_debug(monkeypatch, capfd):
    monkeypatch.setattr(emulator.cli, "cmd_scenarios", _boom)
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    with pytest.raises(SystemExit) as e:
        emulator.cli.main(["scenarios"])
    err = capfd.readouterr().err
    assert e.value.code == 1 and err.count("\n") == 1
    assert "internal error: RuntimeError: boom | second line" in err and "--debug" in err and DEBUG_ENV in err
    for argv in (["--debug", "scenarios"], ["scenarios", "--debug"]):
        with pytest.raises(RuntimeError, match="boom"):
            emulator.cli.main(argv)
    monkeypatch.setenv(DEBUG_ENV, "1")
    with pytest.raises(RuntimeError, match="boom"):
        emulator.cli.main(["scenarios"])


def test_debug_env_shows_the_traceback_in_a_real_process():
    code = ("import sys, emulator.cli as c\n"
            "def boom(args): raise RuntimeError('boom')\n"
            "c.cmd_scenarios = boom\nsys.exit(c.main())\n")
    plain = subprocess.run([sys.executable, "-c", code, "scenarios"], capture_output=True, text=True, timeout=120,
                           env={**os.environ, DEBUG_ENV: ""})
    assert plain.returncode == 1 and "Traceback" not in plain.stderr and plain.stderr.count("\n") == 1
    debug = subprocess.run([sys.executable, "-c", code, "scenarios"], capture_output=True, text=True, timeout=120,
                           env={**os.environ, DEBUG_ENV: "1"})
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "RuntimeError: boom" in debug.stderr


def test_help_documents_debug_and_the_exit_codes():
    for prog, module in PROGRAMS.items():
        text = module.build_parser().format_help()
        assert "--debug" in text and DEBUG_ENV in text and "exit 2" in text, prog
