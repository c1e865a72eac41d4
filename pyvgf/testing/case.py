"""A drawn test graph: a built TOSA graph plus the value ranges its inputs may take."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..build import Graph, Value


@dataclass(frozen=True)
class Domain:
    """The values an input may hold: [low, high], optionally never zero, optionally only
    multiples of `step` (so that sums of products are exact in any order, even in float16)."""

    low: float
    high: float
    nonzero: bool = False
    step: float | None = None


def _default_domain(dtype: np.dtype) -> Domain:
    if dtype == np.bool_:
        return Domain(0, 1)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return Domain(int(info.min), int(info.max))
    return Domain(-4.0, 4.0)


@dataclass
class GraphCase:
    """A graph drawn by `pyvgf.testing.ops()` or `graphs()`.

    `to_vgf()` is the VGF file (bytes), `to_mlir()` the same graph as TOSA MLIR, and
    `random_inputs(seed)` inputs inside the ranges the graph's operators are defined on.
    Printed, it is its MLIR, so a failing (shrunk) example reads as a TOSA program.
    """

    graph: Graph
    domains: list[Domain] = field(default_factory=list)
    description: str = ""

    def input(self, dtype: object, shape: tuple[int, ...], domain: Domain | None = None) -> Value:
        value = self.graph.input(dtype, shape)
        self.domains.append(domain or _default_domain(value.dtype))
        return value

    def to_vgf(self) -> bytes:
        return self.graph.to_bytes()

    def to_mlir(self) -> str:
        return self.graph.to_mlir()

    def random_inputs(self, seed: int) -> list[np.ndarray]:
        """One array per graph input, reproducible from `seed`."""
        rng = np.random.default_rng(seed)
        arrays = []
        for value, domain in zip(self.graph.inputs, self.domains):
            arrays.append(_random(rng, value.dtype, value.shape, domain))
        return arrays

    def __repr__(self) -> str:
        head = f"// {self.description}\n" if self.description else ""
        return head + self.to_mlir()

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        """Hypothesis prints falsifying examples with this: show the MLIR."""
        printer.text(repr(self))


def _random(rng: np.random.Generator, dtype: np.dtype, shape: tuple[int, ...], domain: Domain) -> np.ndarray:
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        data = rng.integers(int(domain.low), int(domain.high), size=shape, endpoint=True)
        if domain.nonzero:
            data[data == 0] = 1 if domain.high >= 1 else -1
        return data.astype(dtype)
    data = rng.uniform(domain.low, domain.high, size=shape)
    if domain.step is not None:
        data = np.clip(np.round(data / domain.step) * domain.step, domain.low, domain.high)
    if domain.nonzero:
        small = np.abs(data) < 1e-2
        data[small] = np.where(data[small] < 0, -1e-2, 1e-2) if domain.low < 0 else max(domain.low, 1e-2)
    out = data.astype(dtype)
    if domain.nonzero:
        out[out == 0] = np.asarray(1, dtype=dtype)
    return out
