"""The two real int8 models run through pyvgf.load() bit-exactly as Arm's scenario_runner runs them.

The reference is scenario_runner on Vulkan with the ML emulation layer (lavapipe here), on
seeded random int8 inputs; its outputs are cached under .cache/real-models keyed by the model's
content and the seed, so CI pays for the Vulkan run once.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

import pyvgf
import references  # tools/references.py

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "real-models"
SEEDS = (0, 1)
def _inputs(vgf: Path, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    specs, _ = references.vgf_io(vgf)
    return [rng.integers(-128, 128, size=s.shape, dtype=np.int8).astype(s.dtype) for s in specs]


def _scenario_outputs(vgf: Path, seed: int, inputs: list[np.ndarray]) -> list[np.ndarray]:
    key = hashlib.sha256(vgf.read_bytes()).hexdigest()[:16]
    cached = CACHE / f"{vgf.stem}-{key}-seed{seed}.npz"
    if cached.exists():
        with np.load(cached) as data:
            return [data[f"output_{k}"] for k in range(len(data.files))]
    outputs = references.scenario_run(vgf, inputs)
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_name(cached.name + ".tmp.npz")
    np.savez(tmp, **{f"output_{k}": o for k, o in enumerate(outputs)})
    tmp.replace(cached)
    return outputs


@pytest.mark.parametrize("seed", SEEDS)
def test_real_model_matches_scenario_runner(real_model: Path, seed: int) -> None:
    inputs = _inputs(real_model, seed)
    expected = _scenario_outputs(real_model, seed, inputs)
    with pyvgf.load(real_model) as model:
        got = model.run(inputs)
    assert len(got) == len(expected)
    for k, (g, e) in enumerate(zip(got, expected)):
        assert g.dtype == e.dtype and g.shape == e.shape, f"output {k}: {g.dtype}{g.shape}"
        diff = np.flatnonzero(g.astype(np.int64) != e.astype(np.int64))
        assert diff.size == 0, (
            f"output {k}: {diff.size}/{e.size} elements differ, first at {diff[0]}: "
            f"pyvgf {g.flat[diff[0]]}, scenario_runner {e.flat[diff[0]]}"
        )


def test_scenario_outputs_depend_on_input(real_model: Path) -> None:
    """The oracle itself is not constant: two seeds give two different outputs."""
    outs = [_scenario_outputs(real_model, s, _inputs(real_model, s))[0] for s in SEEDS]
    assert not np.array_equal(outs[0], outs[1])
