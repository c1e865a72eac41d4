"""The mutation fuzzing campaign (pyvgf.testing.fuzz, tools/fuzz.py) on both backends: a short
run here, the long one (100,000 cases a target, PYVGF_FUZZ_CASES to change) marked slow; and the
harness itself: a signal, an escape and a hang in a case are caught and reproducers saved."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

import fuzz as campaign_tool  # tools/fuzz.py
from pyvgf.testing import fuzz

ROOT = Path(__file__).resolve().parents[1]


def _require(target: str) -> None:
    if "vulkan" in target:
        from support.vulkan import require_vulkan

        require_vulkan()


@pytest.mark.parametrize("target,cases", [("read", 200), ("load-cpu", 40), ("spirv-cpu", 40), ("cli", 6),
                                          ("load-vulkan", 12), ("spirv-vulkan", 12), ("scenario", 40), ("pte", 40),
                                          ("pte-cli", 6)])
def test_short_campaign(target, cases, tmp_path):
    _require(target)
    report = fuzz.campaign(target, campaign_tool.seeds_for(target), cases, seed=1, out=tmp_path)
    assert report.cases == cases
    assert report.escapes == 0, "\n".join(p.with_suffix(".txt").read_text() for p in report.failures)
    assert report.counts.get("rejected", 0) > 0  # the mutations reach the checks


@pytest.mark.slow
@pytest.mark.parametrize("target", ["read", "load-cpu", "spirv-cpu", "cli", "load-vulkan", "spirv-vulkan",
                                    "scenario", "pte", "pte-cli"])
def test_long_campaign(target, tmp_path):
    _require(target)
    cases = int(os.environ.get("PYVGF_FUZZ_CASES", "100000"))
    report = campaign_tool.run(target, cases, seed=0, jobs=os.cpu_count() or 1, out=tmp_path, timeout=120,
                               memory_mb=8192)
    print(report.summary())
    assert report.cases == cases and report.escapes == 0, [str(p) for p in report.failures]


@pytest.fixture
def test_targets(monkeypatch):
    """tests/support/fuzz_targets.py importable by the workers."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]))
    for name in ("segfault", "parse_int", "sleep"):
        monkeypatch.setitem(fuzz.TARGETS, name, fuzz.Target(f"support.fuzz_targets:{name}", lambda data, rng: data))


def test_a_signal_in_a_case_is_a_crash_with_a_reproducer(tmp_path, test_targets):
    report = fuzz.campaign("segfault", [b"x"], 2, out=tmp_path)
    assert report.counts == {"crash": 2}  # the worker is started again after each
    assert len(report.failures) == 2
    assert "signal 11" in report.failures[0].with_suffix(".txt").read_text()
    assert report.failures[0].read_bytes() == b"x"


def test_escapes_and_hangs_are_failures(tmp_path, test_targets):
    report = fuzz.campaign("parse_int", [b"12", b"x"], 4, out=tmp_path)
    assert report.counts == {"ok": 2, "escape": 2}
    assert "ValueError" in report.failures[0].with_suffix(".txt").read_text()
    report = fuzz.campaign("sleep", [b""], 1, out=tmp_path, timeout=0.5)  # no CPU: 10 x 0.5 s of wall time
    assert report.counts == {"hang": 1}
    assert "wall time" in report.failures[-1].with_suffix(".txt").read_text()


def test_cases_are_reproducible():
    target = fuzz.TARGETS["spirv-cpu"]
    seeds = campaign_tool.spirv_seeds()
    assert fuzz.case_bytes(target, seeds, 3, 17) == fuzz.case_bytes(target, seeds, 3, 17)
    words = list(range(5)) + [(2 << 16) | 17, 3] * 10
    assert fuzz.mutate_words(words, random.Random(1)) == fuzz.mutate_words(words, random.Random(1))
