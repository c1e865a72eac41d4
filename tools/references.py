"""Reference executors: Arm's own tools run a model so that pyvgf can be checked against them.

tosa_reference(mlir_text, inputs)   TOSA MLIR through tosa_reference_model (op semantics)
"""

from __future__ import annotations

import atexit
import multiprocessing
import re
from multiprocessing.connection import Connection

import ml_dtypes
import numpy as np
from fixtures import tosa_from_mlir


class ReferenceError(RuntimeError):
    """A reference tool failed; the message carries its output."""


class ReferenceUnpredictable(ReferenceError):
    """tosa_reference_model ran the graph, but a REQUIRE of the specification failed: the
    specification leaves the result unpredictable, so there is nothing to compare with."""


# MLIR element type -> numpy dtype, for the types the reference model cannot hand numpy
# natively (it takes and gives bf16/fp8 as raw bytes).
_MLIR_TYPES = {
    "i1": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i48": np.dtype(np.int64),
    "i64": np.dtype(np.int64),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f32": np.dtype(np.float32),
    "f8E4M3FN": np.dtype(ml_dtypes.float8_e4m3fn),
    "f8E5M2": np.dtype(ml_dtypes.float8_e5m2),
}
_RAW = {
    np.dtype(ml_dtypes.bfloat16): np.uint16,
    np.dtype(ml_dtypes.float8_e4m3fn): np.uint8,
    np.dtype(ml_dtypes.float8_e5m2): np.uint8,
}
_MAIN_RESULTS = re.compile(
    r"func\.func\s+@main\s*\((?:[^()]|\([^()]*\))*\)\s*->\s*(\([^)]*\)|[^{]+)"
)
_ELEMENT = re.compile(r"tensor<(?:[0-9?]+x)*([A-Za-z0-9]+)>")


def _result_dtypes(mlir_text: str) -> list[np.dtype]:
    match = _MAIN_RESULTS.search(mlir_text)
    if match is None:
        raise ReferenceError("the MLIR has no func.func @main with result types")
    return [_MLIR_TYPES[name] for name in _ELEMENT.findall(match.group(1))]


def _reference_worker(conn: Connection) -> None:
    """Child process loop: run flatbuffers in tosa_reference_model, which may crash the process
    (a failed REQUIRE can end in SIGFPE); the parent sees the crash as a closed pipe."""
    import tosa_reference_model

    valid = tosa_reference_model.GraphStatus.TOSA_VALID
    unpredictable = tosa_reference_model.GraphStatus.TOSA_UNPREDICTABLE
    while True:
        flatbuffer, inputs = conn.recv()
        try:
            outputs, status = tosa_reference_model.run(flatbuffer, inputs)
        except ValueError as exc:
            conn.send(("error", f"tosa_reference_model rejected the graph or inputs: {exc}"))
            continue
        if status == valid:
            conn.send(("ok", outputs))
        elif status == unpredictable:
            conn.send(("unpredictable", "result unpredictable (a REQUIRE failed)"))
        else:
            conn.send(("error", f"tosa_reference_model finished with status {status}"))


class _Worker:
    """One long-lived child process running tosa_reference_model, restarted after a crash."""

    def __init__(self) -> None:
        self._proc: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None

    def run(self, flatbuffer: bytes, inputs: list[np.ndarray]) -> tuple[str, object]:
        if self._proc is None or not self._proc.is_alive():
            parent, child = multiprocessing.get_context("fork").Pipe()
            self._proc = multiprocessing.get_context("fork").Process(
                target=_reference_worker, args=(child,), daemon=True
            )
            self._proc.start()
            child.close()
            self._conn = parent
        try:
            self._conn.send((flatbuffer, inputs))
            return self._conn.recv()
        except (EOFError, ConnectionError):
            self._proc.join()
            code = self._proc.exitcode
            self._proc = None
            return "crash", f"tosa_reference_model crashed (exit code {code})"

    def close(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join()
            self._proc = None


_WORKER = _Worker()
atexit.register(_WORKER.close)


def tosa_reference(mlir_text: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run TOSA MLIR (text with a `func.func @main`) in `tosa_reference_model`.

    `inputs` follow @main's argument order, each of the argument's dtype (bf16 and fp8 as
    ml_dtypes arrays, int48 as int64). Returns @main's results with their declared dtypes.
    Raises ReferenceUnpredictable when a REQUIRE of the specification fails for these input
    values, ReferenceError when the graph is rejected or the reference model crashes.
    The model runs in a child process, so that its crashes cannot take the caller down.
    """
    flatbuffer = tosa_from_mlir(mlir_text).read_bytes()
    raw_inputs = [np.ascontiguousarray(x).view(_RAW.get(x.dtype, x.dtype)) for x in inputs]
    kind, payload = _WORKER.run(flatbuffer, raw_inputs)
    if kind == "unpredictable":
        raise ReferenceUnpredictable(f"tosa_reference_model: {payload}")
    if kind != "ok":
        raise ReferenceError(str(payload))
    outputs = payload
    dtypes = _result_dtypes(mlir_text)
    if len(dtypes) != len(outputs):
        raise ReferenceError(f"@main declares {len(dtypes)} results, the model gave {len(outputs)}")
    return [out.view(dtype) if out.dtype != dtype else out for out, dtype in zip(outputs, dtypes)]
