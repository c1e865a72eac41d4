"""The suite's scenario_runner wall time per repeat: reported only when it rises above the
processes' noise (the first H200 run printed negative figures from one process of each)."""

from __future__ import annotations

import pytest

from bench.suite import wall_per_repeat  # tools/bench/suite.py


def test_clear_difference_gives_the_time_per_repeat():
    timing = wall_per_repeat([1.00, 1.01, 1.02], [1.50, 1.51, 1.52], 10)
    assert timing.median == pytest.approx(0.05)


@pytest.mark.parametrize("short, long", [([1.0, 1.1, 1.2], [0.9, 1.0, 1.1]),
                                         ([1.0, 1.3, 1.6], [1.2, 1.4, 1.5])])
def test_negative_or_noisy_differences_are_not_reported(short, long):
    assert wall_per_repeat(short, long, 10) is None
