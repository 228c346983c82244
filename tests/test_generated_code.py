"""The committed protocol code (policy_engine/_generated) matches proto/yarnrl/v1/scheduler.proto.

Regenerates into a temporary directory with tools/genproto.py and compares file by file. The only differences
allowed are the protoc / grpcio version stamps (the code runs on any protobuf and grpcio at least as new as the
ones that generated it, which pyproject.toml requires). On failure: run `make proto` and commit the result.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GENERATED = REPO / "policy_engine" / "_generated"

_STAMPS = [
    (re.compile(r"# Protobuf Python Version: .*"), "# Protobuf Python Version: *"),
    (re.compile(r"_runtime_version\.ValidateProtobufRuntimeVersion\([^)]*\)", re.S), "ValidateProtobufRuntimeVersion(*)"),
    (re.compile(r"GRPC_GENERATED_VERSION = '[^']*'"), "GRPC_GENERATED_VERSION = *"),
]


def _normalized(text: str) -> str:
    for pattern, repl in _STAMPS:
        text = pattern.sub(repl, text)
    return text


def test_committed_protocol_code_is_up_to_date(tmp_path):
    subprocess.run([sys.executable, str(REPO / "tools" / "genproto.py"), "--out", str(tmp_path)], check=True,
                   capture_output=True, text=True, cwd=tmp_path)
    fresh_root = tmp_path / "policy_engine" / "_generated"
    fresh = sorted(p.relative_to(fresh_root) for p in fresh_root.rglob("*") if p.is_file())
    committed = sorted(p.relative_to(GENERATED) for p in GENERATED.rglob("*")
                       if p.is_file() and "__pycache__" not in p.parts)
    assert committed == fresh, "policy_engine/_generated has other files than protoc writes: run `make proto`"
    stale = [str(rel) for rel in fresh
             if _normalized((GENERATED / rel).read_text()) != _normalized((fresh_root / rel).read_text())]
    assert not stale, f"generated protocol code is stale ({', '.join(stale)}): run `make proto` and commit it"


def test_generated_code_is_tracked_by_git():
    """Committed, not just present in this checkout: a wheel built from a clean clone must contain it."""
    try:
        out = subprocess.run(["git", "ls-files", "policy_engine/_generated"], cwd=REPO, capture_output=True,
                             text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout (an unpacked sdist): nothing to check")
    assert "policy_engine/_generated/yarnrl/v1/scheduler_pb2.py" in out
    assert "policy_engine/_generated/yarnrl/v1/scheduler_pb2_grpc.py" in out


def test_importing_the_protocol_needs_no_protoc(monkeypatch):
    """policy_engine.proto only imports the committed modules: no grpc_tools, no chdir, no writes."""
    code = ("import sys, os; cwd = os.getcwd(); sys.modules['grpc_tools'] = None; "
            "from policy_engine.proto import pb, SERVICE_NAME; assert os.getcwd() == cwd; "
            "print(SERVICE_NAME, pb.ScheduleRequest(request_id='x').request_id)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.split() == ["yarnrl.v1.PolicyEngine", "x"]
