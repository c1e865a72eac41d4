"""Deliberately wrong backends for the bisect tests: pyvgf's reference backend with one TOSA operator
perturbed (its results moved by a fixed amount), as a user's own backend function."""

from __future__ import annotations

import dataclasses

import numpy as np

import pyvgf
from pyvgf.tosa.registry import OPS


def perturbed(op: str):
    """A backend function (model bytes, inputs) -> outputs that gets every `op` wrong."""

    def backend(model: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
        real = OPS[op]

        def move(result: np.ndarray) -> np.ndarray:
            if result.dtype.kind in "iu":
                return (result.astype(np.int64) + 97).astype(result.dtype)
            return result * np.asarray(1.25, result.dtype) + np.asarray(0.5, result.dtype)

        def wrong(**operands):  # on the reference: the op runs as it is called
            result = real.fn(**operands)
            return tuple(map(move, result)) if isinstance(result, tuple) else move(result)

        OPS[op] = dataclasses.replace(real, fn=wrong)
        try:
            model_ = pyvgf.load(model, backend="reference")
        finally:
            OPS[op] = real
        with model_:
            return model_.run(inputs)

    backend.__name__ = f"wrong_{op.lower()}"
    return backend


def failing(op: str):
    """A backend function that raises whenever the model holds `op` (as a driver may refuse it)."""

    def backend(model: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
        with pyvgf.load(model, backend="reference") as m:
            if any(n.op == op for s in m._schedule.segments for n in s.pipeline.plan.graph.nodes):
                raise RuntimeError(f"this driver does not take {op}")
            return m.run(inputs)

    backend.__name__ = f"no_{op.lower()}"
    return backend


wrong_depthwise = perturbed("DEPTHWISE_CONV2D")
wrong_clamp = perturbed("CLAMP")
