"""The suite's batches of timed runs: each batch's first call after other work goes untimed
(caches and threads another executor left cold), for every executor alike."""

from __future__ import annotations

from bench import suite  # tools/bench/suite.py


def test_a_batch_times_its_runs_after_one_untimed_call():
    calls: list[int] = []
    batches = suite.Batches(lambda: calls.append(len(calls)) or len(calls))
    assert batches.out == 1 and calls == [0]  # the warm-up call when made
    batches.take(3)
    batches.take(2)
    assert len(calls) == 1 + (1 + 3) + (1 + 2)
    assert len(batches.samples) == 5 and all(s >= 0 for s in batches.samples)
