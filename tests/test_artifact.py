"""Model artifacts: safe format, metadata, refusal of tampered or truncated files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from policy_engine.artifact import ArtifactError, load_artifact, save_artifact


def weights():
    rng = np.random.default_rng(0)
    return {"w1": rng.standard_normal((8, 4)).astype(np.float32), "b1": np.zeros(4, np.float32),
            "q": np.arange(6, dtype=np.float64).reshape(2, 3)}


def test_round_trip_keeps_tensors_and_metadata(tmp_path):
    path = tmp_path / "m.safetensors"
    checksum = save_artifact(path, weights(), {"policy": "test", "seed": 7, "config": {"lr": 0.1},
                                               "metrics": {"tmdl": np.float64(12.5)}})
    tensors, meta = load_artifact(path, policy="test")
    for k, v in weights().items():
        np.testing.assert_array_equal(tensors[k], v)
    assert meta["seed"] == 7 and meta["config"] == {"lr": 0.1} and meta["metrics"] == {"tmdl": 12.5}
    assert meta["checksum"] == checksum and meta["code_version"] and meta["format"] == "yarnrl-model/1"


def test_tampered_weights_are_refused(tmp_path):
    path = tmp_path / "m.safetensors"
    save_artifact(path, weights(), {"policy": "test"})
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # flip bits inside the last tensor
    path.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="checksum mismatch"):
        load_artifact(path)


def test_truncated_and_garbage_files_are_refused(tmp_path):
    path = tmp_path / "m.safetensors"
    save_artifact(path, weights(), {"policy": "test"})
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(ArtifactError, match="truncated or corrupt"):
        load_artifact(path)
    path.write_bytes(b"\x80\x04\x95 this is a pickle, not a model")
    with pytest.raises(ArtifactError, match="truncated or corrupt"):
        load_artifact(path)
    with pytest.raises(ArtifactError, match="cannot read"):
        load_artifact(tmp_path / "missing.safetensors")


def test_wrong_policy_and_edited_metadata_are_refused(tmp_path):
    path = tmp_path / "m.safetensors"
    save_artifact(path, weights(), {"policy": "rl-fc"})
    with pytest.raises(ArtifactError, match="for policy 'rl-fc', not 'clqlmrs'"):
        load_artifact(path, policy="clqlmrs")
    # rewrite the header with another checksum, keeping the file well-formed
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    meta = json.loads(header["__metadata__"]["yarnrl"])
    meta["checksum"] = "0" * 64
    header["__metadata__"]["yarnrl"] = json.dumps(meta)
    raw = json.dumps(header).encode()
    raw += b" " * ((8 - len(raw) % 8) % 8)
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + data[8 + n:])
    with pytest.raises(ArtifactError, match="checksum mismatch"):
        load_artifact(path)


def test_save_is_atomic_and_needs_policy(tmp_path):
    path = tmp_path / "m.safetensors"
    save_artifact(path, weights(), {"policy": "test", "seed": 1})
    with pytest.raises(TypeError):
        save_artifact(path, weights(), {"policy": "test", "bad": object()})
    assert load_artifact(path)[1]["seed"] == 1  # the failed save left the old file intact
    assert [p.name for p in tmp_path.iterdir()] == ["m.safetensors"]
    with pytest.raises(ValueError, match="policy"):
        save_artifact(path, weights(), {})
