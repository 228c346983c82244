"""A feature whose extra is not installed fails with one line naming the extra (pyproject.toml's extras)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from policy_engine.extras import MissingExtra, require

REPO = Path(__file__).resolve().parent.parent


def _run_without(blocked: list[str], code: str) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter where the `blocked` modules cannot be imported."""
    prelude = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in blocked)
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, cwd=REPO,
                          timeout=120)


def test_require_names_the_extra():
    require("json", extra="x", feature="f")  # importable: nothing happens
    with pytest.raises(MissingExtra, match=r"feature F needs no_such_module_xyz.*pip install 'yarn-rl\[demo\]'"):
        require("no_such_module_xyz", extra="demo", feature="feature F")


def test_serve_with_webhdfs_but_no_hdfs_client_says_which_extra():
    r = _run_without(["hdfs"], "from policy_engine.cli import main\n"
                               "main(['serve', '--policy', 'fifo', '--port', '0', '--webhdfs', 'http://127.0.0.1:1'])")
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "yarn-rl[webhdfs]" in lines[0] and lines[0].startswith("policy-engine: "), r.stderr


def test_training_rl_fc_without_torch_says_which_extra_and_clqlmrs_still_trains():
    r = _run_without(["torch"], "from emulator.training import algorithms, train\n"
                                "print(algorithms())\n"
                                "train('rl-fc', None, 1, 0, '/nonexistent')\n")
    assert "'clqlmrs'" in r.stdout  # the other learners still load
    assert "unknown training algorithm 'rl-fc'" in r.stderr and "yarn-rl[train]" in r.stderr, r.stderr


def test_serving_imports_no_torch_gymnasium_or_matplotlib():
    """Everything `policy-engine serve` loads (every registered policy included) runs on the core install."""
    r = _run_without(["torch", "gymnasium", "matplotlib", "tqdm", "hdfs", "cachetools"],
                     "from policy_engine.policy import available\n"
                     "import policy_engine.server, policy_engine.client\n"
                     "from policy_engine.modules import unavailable\n"
                     "print(len(available()), sorted(unavailable))\n")
    assert r.returncode == 0, r.stderr
    n, rest = r.stdout.split(" ", 1)
    assert int(n) >= 10 and rest.strip() == "[]"
