"""The suite times pyvgf's cpu backend only once no run leaves loops to the compiler process:
with a cold cache it timed the reference standing in for them (the H200 host's first OpenBLAS
run: 128-390 ms a run of a model that runs in 8-13 ms)."""

from __future__ import annotations

import pytest

pytest.importorskip("numba", reason="the fast extra compiles loops in the background")
from bench import suite  # tools/bench/suite.py
from pyvgf.fast import background


def test_runs_until_the_compiler_has_nothing_left(monkeypatch):
    pending = [2]  # the first run asked for a loop; the run after it, for one more
    calls: list[str] = []

    def run() -> None:
        calls.append("run")
        pending[0] -= 1

    monkeypatch.setattr(background, "busy", lambda: pending[0] > 0)
    monkeypatch.setattr(background, "wait", lambda timeout=None: calls.append("wait"))
    suite.compiled(run)
    assert calls == ["wait", "run", "wait", "run"]


def test_a_warm_cache_costs_no_run(monkeypatch):
    monkeypatch.setattr(background, "busy", lambda: False)
    suite.compiled(lambda: pytest.fail("ran again"))
