"""pyvgf.distributed on a local Ray instance (2 CPUs): dataset evaluation and campaigns, with
workers that die and are retried. Ray starts once for the module (it takes seconds)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pyvgf
from pyvgf.distributed import _resolve, campaign, draw, evaluate, read_reproducer
from pyvgf.testing import ops

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def classifier(vgf_model) -> Path:
    """x * w + b over ten logits (tests/models/distributed_classifier.mlir, by model-converter)."""
    return vgf_model("distributed_classifier")


def _crash_once(marker: Path, trigger: float):
    """A backend (pyvgf cpu) whose process dies, once, on the row whose first value is `trigger`."""
    def run(model: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
        if inputs[0].flat[0] == trigger and marker.exists():
            marker.unlink()
            os._exit(1)
        return pyvgf.load(model).run(inputs)
    return run


def test_evaluate_survives_a_dead_worker(local_ray, classifier, tmp_path):
    model = pyvgf.load(classifier)
    inputs = [[np.full((1, 10), float(i), np.float32) + np.arange(10, dtype=np.float32) / 10] for i in range(24)]
    references = [model.run(x) for x in inputs]
    wrong = references[5][0].copy()
    wrong[0, 0] = wrong.max() + 0.5          # one row whose top-1 differs, by a known error
    references[5] = [wrong]
    marker = tmp_path / "crash"
    marker.touch()
    summary = evaluate(classifier, inputs, references, backend=_crash_once(marker, 7.0), workers=2, batch_size=4)
    assert not marker.exists()               # a worker did die (on row 7) and its batch was redone
    assert summary["rows"] == 24
    assert summary["top1_agreement"] == [23 / 24]
    expected = wrong[0, 0] - model.run(inputs[5])[0][0, 0]
    assert summary["max_abs_error"][0] == pytest.approx(expected)
    assert "| 0 | " in str(summary) and "24 rows" in str(summary)


def test_evaluate_a_pte_dataset_against_torch(local_ray, classifier):
    """A Ray Dataset through an ExecuTorch program (ExecuTorch's export, tests/fixtures/pte):
    three inputs, three outputs, compared with torch's outputs for the same inputs."""
    import ray.data

    folder = Path(__file__).parent / "fixtures" / "pte" / "multi_io"
    row = {f"input_{i}": np.load(folder / f"input_{i}.npy") for i in range(3)}
    row |= {f"reference_{i}": np.load(folder / f"torch_{i}.npy") for i in range(3)}
    summary = evaluate(folder / "model.pte", ray.data.from_items([row] * 6), workers=1)
    assert summary["rows"] == 6
    assert len(summary["max_abs_error"]) == 3 and max(summary["max_abs_error"]) < 1e-5
    assert summary["top1_agreement"] == [None] * 3                          # no vector outputs
    x = [np.zeros((1, 10), np.float32)]
    with pytest.raises(ValueError, match="references: 1 rows, fewer than the inputs"):
        evaluate(classifier, [x, x], [x])
    with pytest.raises(ValueError, match="as its columns reference_0"):
        evaluate(classifier, ray.data.from_items([row]), [x])


def _planted(marker: Path):
    """pyvgf cpu with a planted bug: every numeric output of more than 8 elements is off by one;
    and its process dies once, on the first case it sees."""
    def run(model: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
        if marker.exists():
            marker.unlink()
            os._exit(1)
        outputs = pyvgf.load(model).run(inputs)
        return [o + np.ones(1, o.dtype) if o.size > 8 and o.dtype != np.bool_ else o for o in outputs]
    return run


def test_campaign_finds_a_planted_disagreement(local_ray, tmp_path):
    marker = tmp_path / "crash"
    marker.touch()
    planted = _planted(marker)
    summary = campaign(ops(["binary", "unary"]), ["cpu", planted], n=200, seed=3, workers=2,
                       out_dir=tmp_path / "out", max_failures=3, progress=False)
    assert not marker.exists()
    assert len(summary["failures"]) == 3 and summary["cases"] < 200         # stopped early
    found = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert found == sorted(Path(f).name for f in summary["failures"])        # no partial, no duplicate
    for folder in summary["failures"]:
        case = read_reproducer(folder)
        assert "elements differ" in case["record"]["message"]
        assert case["mlir"].startswith("module") and (Path(folder) / "model.vgf").exists()
        cpu = pyvgf.load(case["model"]).run(case["inputs"])
        assert all(np.array_equal(a, b) for a, b in zip(cpu, case["outputs"]["cpu"]))
        assert any(o.size > 8 for o in cpu)                                  # what was planted
        assert not all(np.array_equal(a, b) for a, b in zip(cpu, planted(case["model"], case["inputs"])))
        assert case["record"]["bisect"].startswith("first operator where cpu and")      # the one op
        assert list((Path(folder) / "bisect").glob("*/op.vgf"))


def test_campaign_draws_the_same_cases_on_any_worker_count(local_ray, tmp_path):
    marker = tmp_path / "never"
    runs = [campaign(ops(["binary"]), ["cpu", _planted(marker)], n=30, seed=11, workers=w,
                     out_dir=tmp_path / f"w{w}", max_failures=100, progress=False) for w in (1, 2)]
    assert runs[0]["cases"] == runs[1]["cases"] == 30
    names = [[Path(f).name for f in run["failures"]] for run in runs]
    assert names[0] == names[1] and names[0]
    again = [c.to_mlir() for c in draw(ops(["binary"]), seed=11, chunk=1)]
    assert again == [c.to_mlir() for c in draw(ops(["binary"]), seed=11, chunk=1)]
    assert again != [c.to_mlir() for c in draw(ops(["binary"]), seed=12, chunk=1)]


def test_bench_distributed_is_a_pyvgf_bench_subcommand():
    done = subprocess.run([sys.executable, "-m", "pyvgf", "bench", "distributed", "--help"],
                          capture_output=True, text=True, check=True)
    assert "--campaign N" in done.stdout and "--workers" in done.stdout


def test_backend_specs():
    assert _resolve("os.path:join")("a", "b") == os.path.join("a", "b")
    for bad, message in [("nope_module:f", "cannot be imported"), ("os:sep", "not a function"),
                         ("gpu9", "unknown backend 'gpu9'")]:
        with pytest.raises(ValueError, match=message):
            _resolve(bad)
    with pytest.raises(ValueError, match="at least two backends"):
        campaign(ops(), ["cpu"], n=1, out_dir="unused")
