"""Reference results from Arm's tools: tosa_reference_model on the graph's TOSA MLIR."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from ..elements import raw_view
from .case import GraphCase


class ReferenceUnavailable(RuntimeError):
    """tosa_reference_model or model-converter is not installed."""


def tosa_flatbuffer(mlir: str) -> bytes:
    """The TOSA FlatBuffer of MLIR text, made by `model-converter --tosa-flatbuffer`."""
    converter = shutil.which("model-converter")
    if converter is None:
        raise ReferenceUnavailable("model-converter is not on PATH (pip install ai-ml-sdk-model-converter)")
    with tempfile.TemporaryDirectory(prefix="pyvgf-ref-") as tmp:
        src, out = Path(tmp) / "m.mlir", Path(tmp) / "m.tosa"
        src.write_text(mlir)
        proc = subprocess.run([converter, "--tosa-flatbuffer", "-i", str(src), "-o", str(out)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(f"model-converter rejected the MLIR:\n{proc.stdout}{proc.stderr}\n{mlir}")
        return out.read_bytes()


def reference_run(case: GraphCase | str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Outputs of tosa_reference_model for a drawn graph (or TOSA MLIR text).

    bf16 and fp8 tensors cross the reference model as raw bytes; for a GraphCase the outputs
    come back with the graph's declared dtypes.
    """
    try:
        import tosa_reference_model
    except ImportError:
        raise ReferenceUnavailable("tosa_reference_model is not installed (pip install tosa-tools)") from None
    mlir = case if isinstance(case, str) else case.to_mlir()
    raw = [raw_view(np.asarray(a)) for a in inputs]
    outputs, status = tosa_reference_model.run(tosa_flatbuffer(mlir), raw)
    if status != tosa_reference_model.GraphStatus.TOSA_VALID:
        raise RuntimeError(f"tosa_reference_model: {status.name} for\n{mlir}")
    outputs = [np.asarray(o) for o in outputs]
    if isinstance(case, GraphCase):
        dtypes = [v.dtype for v in case.graph.outputs]
        outputs = [o.view(d) if o.dtype != d and o.itemsize == d.itemsize else o for o, d in zip(outputs, dtypes)]
    return outputs
