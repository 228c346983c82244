"""Generate the Python protocol code from proto/yarnrl/v1/scheduler.proto (`make proto`).

    python tools/genproto.py [--out DIR]

Writes policy_engine/_generated/yarnrl/v1/scheduler_pb2{,_grpc}.py and .pyi (plus the package __init__ files)
under DIR (default: this checkout). Needs grpcio-tools (in the [test] extra); the engine itself does not, because
the output is committed. tests/test_generated_code.py regenerates into a temporary directory and compares.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = REPO_ROOT / "proto"
PROTO_FILE = PROTO_ROOT / "yarnrl" / "v1" / "scheduler.proto"
# The contract is mapped under this virtual path so the generated imports are package-relative
# (policy_engine._generated.yarnrl.v1.scheduler_pb2) and the descriptor's file name stays the same.
VIRTUAL_PREFIX = "policy_engine/_generated"
GENERATED = ("scheduler_pb2.py", "scheduler_pb2.pyi", "scheduler_pb2_grpc.py")
PACKAGE_DIRS = ("policy_engine/_generated", "policy_engine/_generated/yarnrl", "policy_engine/_generated/yarnrl/v1")
INIT_TEXT = '"""Generated from proto/ by tools/genproto.py (`make proto`); do not edit."""\n'


def generate(out_root: Path) -> list[Path]:
    """Run protoc over the contract into out_root; returns the files written."""
    try:
        from grpc_tools import protoc
    except ImportError:
        raise SystemExit("genproto: grpcio-tools is not installed; pip install 'yarn-rl[test]' "
                         "(or grpcio-tools) to regenerate the protocol code") from None
    if not PROTO_FILE.exists():
        raise SystemExit(f"genproto: {PROTO_FILE} not found (run from a checkout)")
    out_root = Path(out_root).resolve()
    out_root.mkdir(parents=True, exist_ok=True)
    # protoc resolves its include path against the working directory only through -I; no chdir needed.
    import grpc_tools

    well_known = Path(grpc_tools.__file__).resolve().parent / "_proto"
    rc = protoc.main([
        "grpc_tools.protoc", f"-I{VIRTUAL_PREFIX}={PROTO_ROOT}", f"-I{well_known}",
        f"--python_out={out_root}", f"--pyi_out={out_root}", f"--grpc_python_out={out_root}",
        f"{VIRTUAL_PREFIX}/yarnrl/v1/scheduler.proto",
    ])
    if rc != 0:
        raise SystemExit(f"genproto: protoc failed ({rc}) on {PROTO_FILE}")
    written = []
    for d in PACKAGE_DIRS:
        init = out_root / d / "__init__.py"
        init.write_text(INIT_TEXT)
        written.append(init)
    written += [out_root / PACKAGE_DIRS[-1] / name for name in GENERATED]
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=REPO_ROOT, help="root to write policy_engine/_generated/ under")
    args = p.parse_args(argv)
    files = generate(args.out)
    print(f"genproto: wrote {len(files)} files under {Path(args.out).resolve() / PACKAGE_DIRS[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
