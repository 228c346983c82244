"""Generated protocol modules, built from proto/yarnrl/v1/scheduler.proto.

`make proto` (run by `make demo` / `make test`) generates them; when they are missing or older than the .proto
(an edited contract in a development checkout) they are regenerated here on import, with grpc_tools' bundled
protoc. Nothing is copied by hand.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
PROTO_ROOT = REPO_ROOT / "proto"
PROTO_FILE = PROTO_ROOT / "yarnrl" / "v1" / "scheduler.proto"
GENERATED_DIR = PACKAGE_DIR / "_generated" / "yarnrl" / "v1"


def generate(force: bool = False) -> None:
    """Run protoc over the contract if the generated modules are missing or stale."""
    target = GENERATED_DIR / "scheduler_pb2.py"
    if not force and target.exists() and (
        not PROTO_FILE.exists() or target.stat().st_mtime >= PROTO_FILE.stat().st_mtime
    ):
        return
    if not PROTO_FILE.exists():
        raise RuntimeError(f"protocol definition not found at {PROTO_FILE}; reinstall yarn-rl from a checkout")
    from grpc_tools import protoc  # a build dependency, imported only when generating

    # Map the contract under policy_engine/_generated so generated imports are package-relative.
    args = [
        "grpc_tools.protoc",
        f"-Ipolicy_engine/_generated={PROTO_ROOT}",
        f"--python_out={REPO_ROOT}",
        f"--pyi_out={REPO_ROOT}",
        f"--grpc_python_out={REPO_ROOT}",
        "policy_engine/_generated/yarnrl/v1/scheduler.proto",
    ]
    cwd = os.getcwd()
    try:
        os.chdir(REPO_ROOT)
        rc = protoc.main(args)
    finally:
        os.chdir(cwd)
    if rc != 0:
        raise RuntimeError(f"protoc failed ({rc}) on {PROTO_FILE}")
    for d in (PACKAGE_DIR / "_generated", PACKAGE_DIR / "_generated" / "yarnrl", GENERATED_DIR):
        (d / "__init__.py").touch()


generate()
pb = importlib.import_module("policy_engine._generated.yarnrl.v1.scheduler_pb2")
pb_grpc = importlib.import_module("policy_engine._generated.yarnrl.v1.scheduler_pb2_grpc")
SERVICE_NAME = pb.DESCRIPTOR.services_by_name["PolicyEngine"].full_name

if __name__ == "__main__":
    generate(force=True)
    print(f"generated {GENERATED_DIR}")
