"""How a capture or a profile reaches the cpu executor without costing other runs anything.

`WATCHER` holds the watcher of the runs made in the current context (thread), or None. The cpu
backend reads it once per graph dispatch: with None it runs the graph's plan as always; with a
watcher it hands the dispatch to `Watcher.graph`, which runs the plan it chooses with an
observer (`pyvgf.tosa.interpreter.Observer`) and records what it sees.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol

import numpy as np


class Watcher(Protocol):
    def graph(self, pipeline: object, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run data graph `pipeline` (a cpu DataGraphPipeline) on `inputs`; its outputs."""
        ...


WATCHER: ContextVar[Watcher | None] = ContextVar("pyvgf_debug_watcher", default=None)


@contextmanager
def watching(watcher: Watcher) -> Iterator[Watcher]:
    """Runs of cpu models in this context report to `watcher` while the block runs."""
    token = WATCHER.set(watcher)
    try:
        yield watcher
    finally:
        WATCHER.reset(token)
