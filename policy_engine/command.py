"""What the project's command lines (`policy-engine`, `emulator`) share: one-line errors, exit codes, --debug.

Every mistake a user can fix ends in exactly one line on stderr, `PROG: what was wrong; what is valid`, and an exit
code: 2 when the command line itself is wrong (unknown names, mismatched policy and scenario, bad or out-of-range
values, a path that does not exist), 1 when a well-formed command failed while running (an unreadable model file,
an engine that does not answer). Anything else is a bug: one line that says so, and the traceback with `--debug`
or YARNRL_DEBUG=1.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Callable, Sequence

DEBUG_ENV = "YARNRL_DEBUG"
DEBUG_HELP = f"show the Python traceback of an internal error (also: {DEBUG_ENV}=1)"


class UsageError(Exception):
    """The command line is wrong: exit 2."""

    exit_code = 2


class CommandFailed(Exception):
    """A well-formed command could not be carried out (bad file contents, engine unreachable): exit 1."""

    exit_code = 1


class CommandExit(SystemExit):
    """How a command ends after printing its one line: SystemExit with the exit code (so the interpreter prints
    nothing more) whose str() is that line (so callers and tests can match it)."""

    def __init__(self, code: int, message: str):
        super().__init__(code)
        self.message = message

    def __str__(self) -> str:
        return self.message


class OneLineParser(argparse.ArgumentParser):
    """argparse with its usage errors on one line (argparse prints the whole usage block before them)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def add_debug_flag(parser: argparse.ArgumentParser) -> None:
    """--debug on the program and on every subcommand, so it works before or after the command name."""
    parser.add_argument("--debug", action="store_true", default=False, help=DEBUG_HELP)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)


def one_line(text: object) -> str:
    """A message on one line: later lines (a child's log, a wrapped gRPC detail) joined with ' | '."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return " | ".join(lines) if lines else "(no message)"


def debug_enabled(argv: Sequence[str] | None) -> bool:
    argv = sys.argv[1:] if argv is None else argv
    return "--debug" in argv or os.environ.get(DEBUG_ENV, "") not in ("", "0", "false", "no")


def run_main(parser: argparse.ArgumentParser, argv: Sequence[str] | None,
             translate: Callable[[BaseException], BaseException | None] | None = None) -> int:
    """Parse argv, run the chosen command (`args.fn(args)`); every failure becomes one line on stderr and
    CommandExit(code). Returns the command's exit code (0) on success.

    `translate` maps a library exception (UnknownPolicy, ArtifactError, ...) to UsageError or CommandFailed, or
    returns None for "not a user's mistake".
    """
    prog = parser.prog
    args = parser.parse_args(argv)
    debug = debug_enabled(argv) or getattr(args, "debug", False)
    try:
        return int(args.fn(args) or 0)
    except (UsageError, CommandFailed) as e:
        return _fail(prog, e, e.exit_code)
    except KeyboardInterrupt:
        if debug or argv is not None:  # called from Python (tests, scripts): the caller decides
            raise
        return _fail(prog, "interrupted", 130)
    except Exception as e:  # noqa: BLE001 - the last line of defence: one line unless --debug
        mapped = translate(e) if translate is not None else None
        if isinstance(mapped, (UsageError, CommandFailed)):
            if debug:
                raise
            return _fail(prog, mapped, mapped.exit_code)
        if debug:
            raise
        return _fail(prog, f"internal error: {type(e).__name__}: {one_line(e)} (a bug, not your input: rerun "
                           f"with --debug or {DEBUG_ENV}=1 for the traceback and report it)", 1)


def _fail(prog: str, e: object, code: int):
    line = f"{prog}: {one_line(e)}"
    print(line, file=sys.stderr, flush=True)
    raise CommandExit(code, line)


def existing_file(path: str | None, what: str = "model file") -> str | None:
    """A path argument that must name an existing regular file (None passes through)."""
    if path is None:
        return None
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{what} {path} does not exist")
    if p.is_dir():
        raise UsageError(f"{what} {path} is a directory, not a file")
    return path


def positive(name: str, value: float | None, allow_zero: bool = False) -> None:
    if value is None:
        return
    if not (value >= 0 if allow_zero else value > 0) or value != value or value == float("inf"):
        raise UsageError(f"{name} must be a {'non-negative' if allow_zero else 'positive'} finite number, "
                         f"not {value}")
