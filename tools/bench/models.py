"""The benchmark networks: seeded weights, TOSA graphs (via pyvgf.build) and their torch twins.

Each network exists twice from ONE set of weights: as a pyvgf.build Graph written as TOSA MLIR
(NHWC, weights as constants) and as a torch function (NCHW, the same weights, eager). The weights
are plain numpy arrays in a dict, so they can be saved beside a prebuilt VGF (.npz) and the torch
twin rebuilt where model-converter is missing.

    mobilenet_v2_fp32    MobileNetV2 1.0, 224x224x3, batch-norm folded into conv bias
    mobilenet_v2_int8    the same network quantized TOSA style: int8 conv/depthwise with int32
                         bias, per-channel RESCALE to int8, residual adds in int32 (scales from
                         one calibration pass of the fp32 network); its torch twin is the fp32 net
    transformer_fp32     one pre-norm transformer encoder block (ViT-S: 197 tokens, d=384,
                         6 heads, MLP 1536, GELU by ERF)
    conv2d_large_fp32    one 3x3 conv2d, 1x56x56x128 -> 1x56x56x256
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pyvgf.build import Graph, Value

# MobileNetV2 inverted-residual settings: (expansion t, output channels c, repeats n, stride s).
_MOBILENET_V2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                 (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
_I8_ZERO = np.zeros(1, np.int8)
_F32_ZERO = np.zeros(1, np.float32)


@dataclass(frozen=True)
class Network:
    """One benchmark network: its TOSA MLIR, inputs, and the fp32 torch twin's name and weights."""

    name: str
    mlir: str
    inputs: list[np.ndarray]
    weights: dict[str, np.ndarray]
    torch_inputs: list[np.ndarray]
    torch_net: str
    exact: bool


# -- MobileNetV2 -------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Conv:
    """One conv layer of MobileNetV2 (TOSA layouts: conv [O,KH,KW,I], depthwise [KH,KW,C,1])."""

    key: str
    kind: str  # "conv" or "dw"
    stride: int
    relu6: bool


def _mobilenet_layers() -> list[tuple[str, list[_Conv], bool]]:
    """(block name, its convs, residual?) in order; the stem and head are blocks without residual."""
    blocks = [("stem", [_Conv("stem", "conv", 2, True)], False)]
    cin, index = 32, 0
    for t, c, n, s in _MOBILENET_V2:
        for i in range(n):
            stride = s if i == 0 else 1
            name = f"b{index}"
            convs = [] if t == 1 else [_Conv(f"{name}.expand", "conv", 1, True)]
            convs += [_Conv(f"{name}.dw", "dw", stride, True), _Conv(f"{name}.project", "conv", 1, False)]
            blocks.append((name, convs, stride == 1 and cin == c))
            cin, index = c, index + 1
    blocks.append(("head", [_Conv("head", "conv", 1, True)], False))
    blocks.append(("fc", [_Conv("fc", "conv", 1, False)], False))
    return blocks


def mobilenet_v2_weights(seed: int = 0) -> dict[str, np.ndarray]:
    """He-initialised weights (TOSA layouts) and biases of MobileNetV2, and a 224x224 input."""
    rng = np.random.default_rng(seed)
    weights: dict[str, np.ndarray] = {}

    def conv(key: str, cin: int, cout: int, k: int) -> None:
        weights[f"{key}.w"] = (rng.standard_normal((cout, k, k, cin)) * math.sqrt(2 / (k * k * cin))).astype(np.float32)
        weights[f"{key}.b"] = (rng.standard_normal(cout) * 0.1).astype(np.float32)

    def dw(key: str, c: int) -> None:
        weights[f"{key}.w"] = (rng.standard_normal((3, 3, c, 1)) * math.sqrt(2 / 9)).astype(np.float32)
        weights[f"{key}.b"] = (rng.standard_normal(c) * 0.1).astype(np.float32)

    conv("stem", 3, 32, 3)
    cin, index = 32, 0
    for t, c, n, _ in _MOBILENET_V2:
        for _ in range(n):
            hidden = cin * t
            if t != 1:
                conv(f"b{index}.expand", cin, hidden, 1)
            dw(f"b{index}.dw", hidden)
            conv(f"b{index}.project", hidden, c, 1)
            cin, index = c, index + 1
    conv("head", 320, 1280, 1)
    conv("fc", 1280, 1000, 1)
    weights["input"] = rng.uniform(-1, 1, (1, 224, 224, 3)).astype(np.float32)
    return weights


def _conv_pad(layer: _Conv) -> list[int]:
    if layer.key in ("head", "fc") or (layer.kind == "conv" and layer.key != "stem"):
        return [0, 0, 0, 0]
    return [1, 0, 1, 0] if layer.stride == 2 else [1, 1, 1, 1]


def mobilenet_v2_graph(weights: dict[str, np.ndarray]) -> Graph:
    """MobileNetV2 fp32 as a TOSA graph: NHWC input 1x224x224x3, output 1x1000 logits."""
    g = Graph()
    x = g.input("float32", (1, 224, 224, 3))
    for _, convs, residual in _mobilenet_layers():
        block_in = x
        for layer in convs:
            if layer.key == "fc":
                x = g.op("AVG_POOL2D", input=x, input_zp=_F32_ZERO, output_zp=_F32_ZERO, kernel=[7, 7],
                         stride=[1, 1], pad=[0, 0, 0, 0], acc_type="FP32", result=("float32", (1, 1, 1, 1280)))
            w, b = weights[f"{layer.key}.w"], weights[f"{layer.key}.b"]
            n, h, wd, _ = x.shape
            pad = _conv_pad(layer)
            k = w.shape[1] if layer.kind == "conv" else w.shape[0]
            oh = (h + pad[0] + pad[1] - k) // layer.stride + 1
            ow = (wd + pad[2] + pad[3] - k) // layer.stride + 1
            cout = w.shape[0] if layer.kind == "conv" else w.shape[2]
            x = g.op("CONV2D" if layer.kind == "conv" else "DEPTHWISE_CONV2D", input=x, weight=w, bias=b,
                     input_zp=_F32_ZERO, weight_zp=_F32_ZERO, pad=pad, stride=[layer.stride] * 2,
                     dilation=[1, 1], acc_type="FP32", result=("float32", (n, oh, ow, cout)))
            if layer.relu6:
                x = g.op("CLAMP", input=x, min_val=0.0, max_val=6.0)
        if residual:
            x = g.op("ADD", input1=x, input2=block_in)
    g.output(g.op("RESHAPE", input1=x, shape=[1, 1000], result=("float32", (1, 1000))))
    return g


def mobilenet_v2_torch(weights: dict[str, np.ndarray], device: str = "cpu",
                       record: dict[str, float] | None = None) -> Callable:
    """The torch twin (NCHW, eager). `record`, when given, gets each conv output's max |value|
    (after its ReLU6) and each residual sum's, for int8 calibration."""
    import torch
    import torch.nn.functional as F

    params = {}
    for _, convs, _ in _mobilenet_layers():
        for layer in convs:
            w = torch.from_numpy(weights[f"{layer.key}.w"])
            w = w.permute(0, 3, 1, 2) if layer.kind == "conv" else w.permute(2, 3, 0, 1)
            params[layer.key] = (w.contiguous().to(device), torch.from_numpy(weights[f"{layer.key}.b"]).to(device))
    blocks = _mobilenet_layers()

    def note(key: str, t: torch.Tensor) -> None:
        if record is not None:
            record[key] = float(t.abs().max())

    def forward(x: torch.Tensor) -> torch.Tensor:
        x = x.permute(0, 3, 1, 2)
        for name, convs, residual in blocks:
            block_in = x
            for layer in convs:
                if layer.key == "fc":
                    x = F.adaptive_avg_pool2d(x, 1)
                    note("pool", x)
                w, b = params[layer.key]
                # padding=1 with stride 2 on an even size never reads the bottom/right pad: it is
                # TOSA's pad [1, 0, 1, 0].
                pad = 0 if _conv_pad(layer) == [0, 0, 0, 0] else 1
                groups = w.shape[0] if layer.kind == "dw" else 1
                x = F.conv2d(x, w, b, stride=layer.stride, padding=pad, groups=groups)
                if layer.relu6:
                    x = F.relu6(x)
                note(layer.key, x)
            if residual:
                x = x + block_in
                note(f"{name}.add", x)
        return x.reshape(1, 1000)

    return forward


def _quant_scale(max_abs: float) -> float:
    return max(max_abs, 1e-6) / 127.0


def _multiplier_shift(scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TOSA RESCALE (scale32) multiplier and shift for each real scale: scale ~ m * 2**-shift."""
    mant, exp = np.frexp(np.asarray(scales, np.float64))
    mult = np.round(mant * (1 << 31)).astype(np.int64)
    carry = mult == (1 << 31)
    mult[carry] //= 2
    exp = exp + carry
    shift = 31 - exp
    if (shift < 2).any() or (shift > 62).any():
        raise ValueError(f"rescale scale out of range: {scales}")
    return mult.astype(np.int32), shift.astype(np.int8)


def _rescale(g: Graph, x: Value, scales: np.ndarray, in_zp: int, out_zp: int, dtype: str) -> Value:
    mult, shift = _multiplier_shift(np.atleast_1d(scales))
    in_dtype = x.dtype.type
    return g.op("RESCALE", input=x, multiplier=mult, shift=shift,
                input_zp=np.array([in_zp], in_dtype), output_zp=np.array([out_zp], dtype),
                scale32=True, rounding_mode="SINGLE_ROUND", per_channel=mult.size > 1,
                input_unsigned=False, output_unsigned=False, result=(dtype, x.shape))


def mobilenet_v2_int8_graph(weights: dict[str, np.ndarray], ranges: dict[str, float]) -> tuple[Graph, np.ndarray]:
    """MobileNetV2 int8 (per-channel symmetric weights, per-tensor activations with ReLU6 outputs
    in [0, 6] at zero point -128) from the fp32 weights and calibrated `ranges`.
    Returns the graph and its int8 input (the fp32 input quantized at scale 1/127)."""
    g = Graph()
    x = g.input("int8", (1, 224, 224, 3))
    scale, zp = 1 / 127, 0
    quantized_input = np.clip(np.round(weights["input"] / scale), -128, 127).astype(np.int8)
    for name, convs, residual in _mobilenet_layers():
        block_in, in_scale, in_zp_block = x, scale, zp
        for layer in convs:
            if layer.key == "fc":
                x = g.op("AVG_POOL2D", input=x, input_zp=np.array([zp], np.int8), output_zp=np.array([zp], np.int8),
                         kernel=[7, 7], stride=[1, 1], pad=[0, 0, 0, 0], acc_type="INT32",
                         result=("int8", (1, 1, 1, 1280)))
            w, b = weights[f"{layer.key}.w"], weights[f"{layer.key}.b"]
            axes = (1, 2, 3) if layer.kind == "conv" else (0, 1, 3)
            w_scale = np.maximum(np.abs(w).max(axis=axes), 1e-8) / 127.0
            shape = (-1, 1, 1, 1) if layer.kind == "conv" else (1, 1, -1, 1)
            wq = np.clip(np.round(w / w_scale.reshape(shape)), -127, 127).astype(np.int8)
            bq = np.round(b / (scale * w_scale)).astype(np.int32)
            n, h, wd, _ = x.shape
            pad = _conv_pad(layer)
            k = w.shape[1] if layer.kind == "conv" else w.shape[0]
            oh = (h + pad[0] + pad[1] - k) // layer.stride + 1
            ow = (wd + pad[2] + pad[3] - k) // layer.stride + 1
            cout = w.shape[0] if layer.kind == "conv" else w.shape[2]
            acc = g.op("CONV2D" if layer.kind == "conv" else "DEPTHWISE_CONV2D", input=x, weight=wq, bias=bq,
                       input_zp=np.array([zp], np.int8), weight_zp=_I8_ZERO, pad=pad, stride=[layer.stride] * 2,
                       dilation=[1, 1], acc_type="INT32", result=("int32", (n, oh, ow, cout)))
            if layer.relu6:
                out_scale, out_zp = 6.0 / 255.0, -128
            else:
                out_scale, out_zp = _quant_scale(ranges[layer.key]), 0
            x = _rescale(g, acc, scale * w_scale / out_scale, 0, out_zp, "int8")
            if layer.relu6:
                x = g.op("CLAMP", input=x, min_val=-128, max_val=127)
            scale, zp = out_scale, out_zp
        if residual:
            common = 2 * max(scale, in_scale) / (1 << 20)
            a = _rescale(g, x, np.array([scale / common]), zp, 0, "int32")
            b = _rescale(g, block_in, np.array([in_scale / common]), in_zp_block, 0, "int32")
            out_scale = _quant_scale(ranges[f"{name}.add"])
            x = _rescale(g, g.op("ADD", input1=a, input2=b), np.array([common / out_scale]), 0, 0, "int8")
            scale, zp = out_scale, 0
    g.output(g.op("RESHAPE", input1=x, shape=[1, 1000], result=("int8", (1, 1000))))
    return g, quantized_input


# -- transformer encoder block -------------------------------------------------------------------

TOKENS, DIM, HEADS, MLP = 197, 384, 6, 1536


def transformer_weights(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def lin(cin: int, cout: int) -> np.ndarray:
        return (rng.standard_normal((cin, cout)) / math.sqrt(cin)).astype(np.float32)

    return {
        "ln1.g": (1 + 0.1 * rng.standard_normal(DIM)).astype(np.float32),
        "ln1.b": (0.1 * rng.standard_normal(DIM)).astype(np.float32),
        "qkv.w": lin(DIM, 3 * DIM), "qkv.b": (0.1 * rng.standard_normal(3 * DIM)).astype(np.float32),
        "proj.w": lin(DIM, DIM), "proj.b": (0.1 * rng.standard_normal(DIM)).astype(np.float32),
        "ln2.g": (1 + 0.1 * rng.standard_normal(DIM)).astype(np.float32),
        "ln2.b": (0.1 * rng.standard_normal(DIM)).astype(np.float32),
        "fc1.w": lin(DIM, MLP), "fc1.b": (0.1 * rng.standard_normal(MLP)).astype(np.float32),
        "fc2.w": lin(MLP, DIM), "fc2.b": (0.1 * rng.standard_normal(DIM)).astype(np.float32),
        "input": rng.standard_normal((1, TOKENS, DIM)).astype(np.float32),
    }


def _scalar(g: Graph, value: float, rank: int = 3) -> Value:
    return g.constant(np.full((1,) * rank, value, np.float32))


def _mul(g: Graph, a: Value, b: Value) -> Value:
    return g.op("MUL", input1=a, input2=b, shift=_I8_ZERO)


def _layer_norm(g: Graph, x: Value, gamma: np.ndarray, beta: np.ndarray) -> Value:
    inv_d = _scalar(g, 1.0 / DIM)
    reduced = ("float32", (1, TOKENS, 1))
    mean = _mul(g, g.op("REDUCE_SUM", input=x, axis=2, result=reduced), inv_d)
    centred = g.op("SUB", input1=x, input2=mean)
    var = _mul(g, g.op("REDUCE_SUM", input=_mul(g, centred, centred), axis=2, result=reduced), inv_d)
    norm = _mul(g, centred, g.op("RSQRT", input1=g.op("ADD", input1=var, input2=_scalar(g, 1e-5))))
    return g.op("ADD", input1=_mul(g, norm, g.constant(gamma.reshape(1, 1, DIM))),
                input2=g.constant(beta.reshape(1, 1, DIM)))


def _linear(g: Graph, x: Value, w: np.ndarray, b: np.ndarray) -> Value:
    out = (1, x.shape[1], w.shape[1])
    y = g.op("MATMUL", A=x, B=w.reshape(1, *w.shape), A_zp=_F32_ZERO, B_zp=_F32_ZERO, result=("float32", out))
    return g.op("ADD", input1=y, input2=g.constant(b.reshape(1, 1, -1)))


def transformer_graph(weights: dict[str, np.ndarray]) -> Graph:
    """A pre-norm encoder block: x + attn(ln1(x)), then + mlp(ln2(.)), input/output 1x197x384."""
    g = Graph()
    x = g.input("float32", (1, TOKENS, DIM))
    dh = DIM // HEADS
    h = _layer_norm(g, x, weights["ln1.g"], weights["ln1.b"])
    qkv = _linear(g, h, weights["qkv.w"], weights["qkv.b"])
    qkv = g.op("RESHAPE", input1=qkv, shape=[TOKENS, 3, HEADS, dh], result=("float32", (TOKENS, 3, HEADS, dh)))
    qkv = g.op("TRANSPOSE", input1=qkv, perms=[1, 2, 0, 3], result=("float32", (3, HEADS, TOKENS, dh)))
    parts = []
    for i in range(3):
        part = g.op("SLICE", input1=qkv, start=[i, 0, 0, 0], size=[1, HEADS, TOKENS, dh],
                    result=("float32", (1, HEADS, TOKENS, dh)))
        parts.append(g.op("RESHAPE", input1=part, shape=[HEADS, TOKENS, dh], result=("float32", (HEADS, TOKENS, dh))))
    q, k, v = parts
    kt = g.op("TRANSPOSE", input1=k, perms=[0, 2, 1], result=("float32", (HEADS, dh, TOKENS)))
    scores = g.op("MATMUL", A=q, B=kt, A_zp=_F32_ZERO, B_zp=_F32_ZERO, result=("float32", (HEADS, TOKENS, TOKENS)))
    scores = _mul(g, scores, _scalar(g, 1 / math.sqrt(dh)))
    top = g.op("REDUCE_MAX", input=scores, axis=2, result=("float32", (HEADS, TOKENS, 1)))
    e = g.op("EXP", input1=g.op("SUB", input1=scores, input2=top))
    total = g.op("REDUCE_SUM", input=e, axis=2, result=("float32", (HEADS, TOKENS, 1)))
    attn = _mul(g, e, g.op("RECIPROCAL", input1=total))
    ctx = g.op("MATMUL", A=attn, B=v, A_zp=_F32_ZERO, B_zp=_F32_ZERO, result=("float32", (HEADS, TOKENS, dh)))
    ctx = g.op("TRANSPOSE", input1=ctx, perms=[1, 0, 2], result=("float32", (TOKENS, HEADS, dh)))
    ctx = g.op("RESHAPE", input1=ctx, shape=[1, TOKENS, DIM], result=("float32", (1, TOKENS, DIM)))
    x = g.op("ADD", input1=x, input2=_linear(g, ctx, weights["proj.w"], weights["proj.b"]))
    h = _linear(g, _layer_norm(g, x, weights["ln2.g"], weights["ln2.b"]), weights["fc1.w"], weights["fc1.b"])
    erf = g.op("ERF", input=_mul(g, h, _scalar(g, 1 / math.sqrt(2))))
    gelu = _mul(g, _mul(g, h, _scalar(g, 0.5)), g.op("ADD", input1=erf, input2=_scalar(g, 1.0)))
    g.output(g.op("ADD", input1=x, input2=_linear(g, gelu, weights["fc2.w"], weights["fc2.b"])))
    return g


def transformer_torch(weights: dict[str, np.ndarray], device: str = "cpu") -> Callable:
    import torch
    import torch.nn.functional as F

    t = {k: torch.from_numpy(v).to(device) for k, v in weights.items() if k != "input"}
    dh = DIM // HEADS

    def forward(x: torch.Tensor) -> torch.Tensor:
        h = F.layer_norm(x, (DIM,), t["ln1.g"], t["ln1.b"], 1e-5)
        qkv = (h @ t["qkv.w"] + t["qkv.b"]).reshape(TOKENS, 3, HEADS, dh).permute(1, 2, 0, 3)
        attn = torch.softmax(qkv[0] @ qkv[1].transpose(1, 2) / math.sqrt(dh), dim=-1)
        ctx = (attn @ qkv[2]).permute(1, 0, 2).reshape(1, TOKENS, DIM)
        x = x + ctx @ t["proj.w"] + t["proj.b"]
        h = F.gelu(F.layer_norm(x, (DIM,), t["ln2.g"], t["ln2.b"], 1e-5) @ t["fc1.w"] + t["fc1.b"])
        return x + h @ t["fc2.w"] + t["fc2.b"]

    return forward


# -- one large conv2d ----------------------------------------------------------------------------

def conv_weights(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "w": (rng.standard_normal((256, 3, 3, 128)) / math.sqrt(9 * 128)).astype(np.float32),
        "b": rng.standard_normal(256).astype(np.float32),
        "input": rng.standard_normal((1, 56, 56, 128)).astype(np.float32),
    }


def conv_graph(weights: dict[str, np.ndarray]) -> Graph:
    g = Graph()
    x = g.input("float32", (1, 56, 56, 128))
    g.output(g.op("CONV2D", input=x, weight=weights["w"], bias=weights["b"], input_zp=_F32_ZERO,
                  weight_zp=_F32_ZERO, pad=[1, 1, 1, 1], stride=[1, 1], dilation=[1, 1],
                  acc_type="FP32", result=("float32", (1, 56, 56, 256))))
    return g


def conv_torch(weights: dict[str, np.ndarray], device: str = "cpu") -> Callable:
    import torch
    import torch.nn.functional as F

    w = torch.from_numpy(weights["w"]).permute(0, 3, 1, 2).contiguous().to(device)
    b = torch.from_numpy(weights["b"]).to(device)

    def forward(x: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x.permute(0, 3, 1, 2), w, b, padding=1).permute(0, 2, 3, 1)

    return forward


# -- the suite -----------------------------------------------------------------------------------

TORCH_NETS: dict[str, Callable[..., Callable]] = {
    "mobilenet_v2": mobilenet_v2_torch, "transformer": transformer_torch, "conv2d": conv_torch,
}
NAMES = ["mobilenet_v2_fp32", "mobilenet_v2_int8", "transformer_fp32", "conv2d_large_fp32"]


def network(name: str, seed: int = 0) -> Network:
    """Build benchmark network `name` (one of NAMES) from seeded weights."""
    if name == "mobilenet_v2_fp32":
        w = mobilenet_v2_weights(seed)
        return Network(name, mobilenet_v2_graph(w).to_mlir(), [w["input"]], w, [w["input"]], "mobilenet_v2", False)
    if name == "mobilenet_v2_int8":
        import torch

        w = mobilenet_v2_weights(seed)
        ranges: dict[str, float] = {}
        with torch.no_grad():
            mobilenet_v2_torch(w, record=ranges)(torch.from_numpy(w["input"]))
        graph, quantized = mobilenet_v2_int8_graph(w, ranges)
        return Network(name, graph.to_mlir(), [quantized], w, [w["input"]], "mobilenet_v2", True)
    if name == "transformer_fp32":
        w = transformer_weights(seed)
        return Network(name, transformer_graph(w).to_mlir(), [w["input"]], w, [w["input"]], "transformer", False)
    if name == "conv2d_large_fp32":
        w = conv_weights(seed)
        return Network(name, conv_graph(w).to_mlir(), [w["input"]], w, [w["input"]], "conv2d", False)
    raise KeyError(f"unknown benchmark model {name!r}; known: {', '.join(NAMES)}")
