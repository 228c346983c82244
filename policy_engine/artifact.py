"""Model artifacts: weights in safetensors with the config, seed, code version and metrics that produced them.

One file: tensors (numpy arrays) plus a JSON metadata block in the safetensors header, with a sha256 over the
tensors. Loading never executes code (no pickle) and refuses a file whose checksum or structure does not match,
with a message saying what is wrong. Writes are atomic (temp file + rename): a crash leaves the old file.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from policy_engine import __version__

FORMAT = "yarnrl-model/1"
_META_KEY = "yarnrl"


class ArtifactError(ValueError):
    """A model file that cannot be used: missing, truncated, tampered with, or for another policy."""


def tensors_checksum(tensors: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for name in sorted(tensors):
        arr = np.ascontiguousarray(tensors[name])
        h.update(name.encode())
        h.update(str(arr.dtype).encode())
        h.update(str(arr.shape).encode())
        h.update(arr.tobytes())
    return h.hexdigest()


@functools.cache
def code_version() -> str:
    """Package version plus the git commit when run from a checkout. Computed once per process (two git
    subprocesses): a long-running engine saves what its code was when it started."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5,
                                cwd=Path(__file__).resolve().parent).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, timeout=5, cwd=Path(__file__).resolve().parent).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit, dirty = "", ""
    return f"{__version__}+{commit}{'.dirty' if dirty else ''}" if commit else __version__


def save_artifact(path: str | Path, tensors: dict[str, np.ndarray], meta: dict[str, Any]) -> str:
    """Write atomically; return the checksum. `meta` must hold at least `policy`."""
    from safetensors.numpy import save

    if "policy" not in meta:
        raise ValueError("artifact metadata needs a 'policy' entry")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: np.ascontiguousarray(v) for k, v in tensors.items()}
    checksum = tensors_checksum(tensors)
    full = {"format": FORMAT, "code_version": meta.get("code_version") or code_version(), **meta,
            "checksum": checksum}
    data = save(tensors, metadata={_META_KEY: json.dumps(full, sort_keys=True, default=_json_default)})
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return checksum


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def load_artifact(path: str | Path, policy: str | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Return (tensors, metadata); raise ArtifactError on anything unexpected."""
    from safetensors.numpy import load

    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ArtifactError(f"model file {path}: cannot read ({e.strerror or e})") from None
    try:
        tensors = load(data)
        header_len = int.from_bytes(data[:8], "little")
        header = json.loads(data[8:8 + header_len])
        meta = json.loads(header.get("__metadata__", {})[_META_KEY])
    except Exception as e:  # safetensors raises its own error types for truncated or malformed files
        raise ArtifactError(f"model file {path}: not a readable yarn-rl model (truncated or corrupt: "
                            f"{type(e).__name__}: {e})") from None
    if meta.get("format") != FORMAT:
        raise ArtifactError(f"model file {path}: format {meta.get('format')!r}, expected {FORMAT!r}")
    actual = tensors_checksum(tensors)
    if actual != meta.get("checksum"):
        raise ArtifactError(f"model file {path}: checksum mismatch (weights changed after saving); refusing it")
    if policy is not None and meta.get("policy") != policy:
        raise ArtifactError(f"model file {path} is for policy {meta.get('policy')!r}, not {policy!r}")
    return tensors, meta
