"""onnxruntime twins of the benchmark networks: the torch twin exported to ONNX, same weights.

    session = onnx_session(model, work, threads=2)               # fp32, CPU provider
    session = onnx_session(model, work, threads=2, int8=True)    # onnxruntime's static QDQ int8

The fp32 twin is `torch.onnx.export` (TorchScript exporter, opset 17) of the torch twin of
models.py, so it computes what pyvgf's fp32 VGF computes. The int8 twin is that ONNX model
quantized by onnxruntime's own static quantizer (QDQ format, per-channel int8 weights, int8
activations calibrated on the model's input): onnxruntime's answer to "run this network in
int8 on a CPU", the yardstick for pyvgf's int8 VGF. It is not the same arithmetic as the TOSA
int8 network (other scales, other rounding), so it is timed, not compared.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _export(model, path: Path) -> None:
    import torch

    from models import TORCH_NETS

    forward = TORCH_NETS[model.torch_net](model.weights, "cpu")

    class Twin(torch.nn.Module):
        def forward(self, *xs):
            return forward(*xs)

    example = tuple(torch.from_numpy(x) for x in model.torch_inputs)
    torch.onnx.export(Twin(), example, str(path), dynamo=False, opset_version=17,
                      input_names=[f"input_{i}" for i in range(len(example))], output_names=["output_0"])


def _quantize(fp32: Path, int8: Path, calibration: list[np.ndarray]) -> None:
    import onnxruntime.quantization as q

    class Reader(q.CalibrationDataReader):
        def __init__(self) -> None:
            self._rows = iter([{f"input_{i}": x for i, x in enumerate(calibration)}])

        def get_next(self):
            return next(self._rows, None)

    prepared = fp32.with_suffix(".prep.onnx")
    q.quant_pre_process(str(fp32), str(prepared))
    q.quantize_static(str(prepared), str(int8), Reader(), quant_format=q.QuantFormat.QDQ,
                      per_channel=True, activation_type=q.QuantType.QInt8, weight_type=q.QuantType.QInt8)


def onnx_session(model, work: Path, threads: int, int8: bool = False):
    """A CPU-provider InferenceSession of `model`'s torch twin (int8: statically quantized) and
    its feed, with `threads` intra-op threads."""
    import onnxruntime as ort

    fp32 = work / f"{model.torch_net}.onnx"
    if not fp32.exists():
        _export(model, fp32)
    path = fp32
    if int8:
        path = work / f"{model.torch_net}.int8.onnx"
        if not path.exists():
            _quantize(fp32, path, model.torch_inputs)
    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    feed = {f"input_{i}": x for i, x in enumerate(model.torch_inputs)}
    return session, feed
