"""Helpers of the runtime tests."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np


def check_threads(model, make_inputs: Callable[[np.random.Generator], list[np.ndarray]],
                  threads: int = 6, runs: int = 8) -> None:
    """Run `model` from several threads at once on different inputs; every result must equal
    the one a sequential run gave for the same inputs."""
    rng = np.random.default_rng(0)
    cases = [make_inputs(rng) for _ in range(threads * runs)]
    expected = [model.run(c) for c in cases]
    got: dict[int, list[np.ndarray]] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(threads)

    def worker(t: int) -> None:
        try:
            barrier.wait()
            for i in range(t, len(cases), threads):
                got[i] = model.run(cases[i])
        except BaseException as exc:  # re-raised below, in the test's thread
            errors.append(exc)

    pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert not errors, errors
    assert sorted(got) == list(range(len(cases)))
    for i, outs in enumerate(expected):
        for a, b in zip(outs, got[i]):
            np.testing.assert_array_equal(a, b)
