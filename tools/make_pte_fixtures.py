"""Make the ExecuTorch `.pte` fixtures of tests/fixtures/pte/ with ExecuTorch's own export.

Run it in a venv that has torch 2.13.0 (CPU), executorch 1.5.1 (installed --no-deps), torchao,
tosa-tools and Arm's model-converter on PATH (see spec/executorch.md, "Fixtures"):

    /work/venvs/et/bin/python tools/make_pte_fixtures.py [--only NAME ...] [--out tests/fixtures/pte]

Each fixture is a folder NAME/ with
    model.pte        what `to_edge_transform_and_lower(..., VgfPartitioner)` + `to_executorch()`
                     writes, exactly as `aot_arm_compiler -t vgf --delegate [--quantize]` does
    input_K.npy      the method's inputs
    torch_K.npy      torch eager's outputs of the float model on those inputs
    exact_K.npy      quantized programs only: the same computation done exactly, outside pyvgf:
                     quantize as ExecuTorch's portable kernel does (float32 1/scale, multiply,
                     round half to even, add zero point, clamp), the delegate's TOSA flatbuffer
                     through tosa_reference_model, dequantize as ExecuTorch does
    executorch_K.npy programs without delegates only: ExecuTorch's own runtime's outputs
    meta.json        what was made and how (versions, quantization parameters)

Models are defined here (torchvision is not importable beside this torch build, and no
pretrained weights can be fetched): MobileNetV2 is torchvision's architecture with seeded random
weights whose batch-norm statistics are calibrated on random images.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import tempfile
from importlib.metadata import version
from pathlib import Path

import numpy as np
import torch
from executorch.backends.arm.quantizer import get_symmetric_quantization_config
from executorch.backends.arm.tosa import TosaSpecification
from executorch.backends.arm.util._factory import create_partitioner, create_quantizer
from executorch.backends.arm.vgf import VgfCompileSpec
from executorch.exir import (
    EdgeCompileConfig,
    ExecutorchBackendConfig,
    to_edge,
    to_edge_transform_and_lower,
)
from torch import nn
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

ROOT = Path(__file__).resolve().parents[1]


# --- models ----------------------------------------------------------------------------------


class AddS32(nn.Module):
    """The S32 add: two int32 tensors in, their sum out."""

    def forward(self, a, b):
        return a + b


class QuantAdd(nn.Module):
    """aot_arm_compiler's `qadd`: a + a, quantized to int8."""

    def forward(self, a):
        return a + a


class MultiIO(nn.Module):
    """Several inputs and outputs, of different shapes; outputs in another order than made."""

    def forward(self, a, b, c):
        s = a + b
        p = s * c
        return p, s - 1.0, torch.relu(b)


class KeywordInputs(nn.Module):
    """Exported with keyword arguments: the program records their names."""

    def forward(self, x, *, scale, bias):
        return x * scale + bias


class TwoDelegates(nn.Module):
    """trunc stays on the CPU under Arm's 1.5.1 VGF partitioner: two delegates around it."""

    def forward(self, x, y):
        u = x * 4.0 + y
        t = torch.trunc(u)
        return t * 0.5 - x, u


class QuantDequant(nn.Module):
    """quantize then dequantize, per tensor and per channel, no delegate: ExecuTorch's kernels."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scales", torch.tensor([0.05, 0.1, 0.013], dtype=torch.float64))
        self.register_buffer("zero_points", torch.tensor([3, -2, 0], dtype=torch.int64))

    def forward(self, x, y):
        ops = torch.ops.quantized_decomposed
        qx = ops.quantize_per_tensor(x, 0.05, 3, -128, 127, torch.int8)
        qy = ops.quantize_per_channel(y, self.scales, self.zero_points, 0, -128, 127, torch.int8)
        return (qx, ops.dequantize_per_tensor(qx, 0.05, 3, -128, 127, torch.int8),
                qy, ops.dequantize_per_channel(qy, self.scales, self.zero_points, 0, -128, 127, torch.int8))


class PortableOps(nn.Module):
    """Data movement and elementwise math as ExecuTorch's portable kernels run them, no delegate
    (int64 tensors are among what Arm's partitioner rejects)."""

    def forward(self, x, i):
        a = torch.cat([x, torch.trunc(x * 3.0)], dim=1).permute(2, 0, 1)  # [4, 2, 6]
        b = a[1:3, :, ::2].reshape(2, 6).transpose(0, 1)  # [6, 2]
        c = torch.clamp(torch.floor(b - 0.25), -1.0, 1.0).unsqueeze(0).expand(3, 6, 2)
        d = torch.where(x > 0, x, -x).flip(0).repeat(1, 2, 1)  # [2, 6, 4]
        s1, s2 = torch.split(x, [1, 2], dim=1)
        j = torch.div(i * 7 - 20, 3, rounding_mode="floor") + torch.sub(i, 2, alpha=3)
        k = (i.to(torch.float32) / 4.0).squeeze(0)
        return c, d, s1 * 2.0, s2.neg().abs(), j, k, torch.eq(i, 3), torch.select(x, 2, 1)


class PortableMath(nn.Module):
    """More elementwise math as ExecuTorch's portable kernels run it, no delegate."""

    def forward(self, x, y, i, j):
        a = torch.abs(x)
        return (torch.exp(x), torch.log(a + 1.0), torch.sigmoid(x), torch.tanh(x), torch.sin(x), torch.cos(x),
                torch.sqrt(a), torch.rsqrt(a + 0.5), torch.reciprocal(y), torch.pow(x, 2.0), torch.maximum(x, y),
                torch.minimum(x, y), torch.remainder(x, 0.7), torch.fmod(x, y), torch.round(x * 3.0), torch.ceil(x),
                torch.sign(x), nn.functional.hardtanh(x), torch.clamp(x, min=-0.5), torch.relu(x), torch.rsub(x, 1.0),
                x <= y, x < y, x != y, torch.logical_xor(x > 0, y > 0), torch.logical_not(x > 0),
                torch.bitwise_and(i, j), torch.bitwise_or(i, j), torch.bitwise_xor(i, j), torch.bitwise_not(i),
                torch.div(i, j, rounding_mode="trunc"), torch.div(i, j, rounding_mode="floor"), i / j,
                torch.abs(i) * 3 + 1, torch.full_like(x, 2.5), x.clone(), torch.transpose(x, 0, 1))


def _divisible(v: float, divisor: int = 8) -> int:
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class ConvBNReLU(nn.Sequential):
    def __init__(self, cin: int, cout: int, kernel: int = 3, stride: int = 1, groups: int = 1):
        super().__init__(
            nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU6(inplace=True),
        )


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = round(cin * expand)
        self.use_res = stride == 1 and cin == cout
        layers: list[nn.Module] = [] if expand == 1 else [ConvBNReLU(cin, hidden, 1)]
        layers += [ConvBNReLU(hidden, hidden, 3, stride, hidden), nn.Conv2d(hidden, cout, 1, bias=False),
                   nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res else self.conv(x)


class MobileNetV2(nn.Module):
    """torchvision's MobileNetV2 layout (width multiplier, classes), random weights."""

    SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1))

    def __init__(self, width: float = 1.0, classes: int = 1000):
        super().__init__()
        cin = _divisible(32 * width)
        last = _divisible(1280 * max(1.0, width))
        layers: list[nn.Module] = [ConvBNReLU(3, cin, stride=2)]
        for t, c, n, s in self.SETTINGS:
            cout = _divisible(c * width)
            for i in range(n):
                layers.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        layers.append(ConvBNReLU(cin, last, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, 1)
        return self.classifier(torch.flatten(x, 1))


def mobilenet_v2(width: float, classes: int) -> MobileNetV2:
    torch.manual_seed(0)
    model = MobileNetV2(width, classes)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.momentum = None  # cumulative average over the calibration batches
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(4, 3, 224, 224))
    return model.eval()


# --- export ----------------------------------------------------------------------------------


def _compile_spec(profile: str, intermediates: str) -> VgfCompileSpec:
    spec = VgfCompileSpec(TosaSpecification.create_from_string(profile))
    spec.dump_intermediate_artifacts_to(intermediates)
    return spec


def export(model: nn.Module, inputs: tuple, profile: str, quantize: bool, intermediates: str,
           segments: bool = False, keywords: tuple[str, ...] = ()):
    """`aot_arm_compiler -t vgf --delegate [--quantize]`'s steps; returns (program bytes, the
    quantized module or None, the edge program). `segments` moves the delegates out of the
    FlatBuffer into data segments behind an extended header."""
    spec = _compile_spec(profile, intermediates)
    args, kwargs = _split(inputs, keywords)
    ep = torch.export.export(model, args, kwargs=kwargs)
    quantized = None
    if quantize:
        quantizer = create_quantizer(spec)
        quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True))
        quantized = prepare_pt2e(ep.module(check_guards=False), quantizer)
        quantized(*inputs)
        quantized = convert_pt2e(quantized)
        ep = torch.export.export(quantized, inputs)
    edge = to_edge_transform_and_lower(
        ep, partitioner=[create_partitioner(spec)], compile_config=EdgeCompileConfig(_check_ir_validity=False)
    )
    program = edge.to_executorch(config=ExecutorchBackendConfig(extract_delegate_segments=segments))
    return program.buffer, quantized, edge


def _split(inputs: tuple, keywords: tuple[str, ...]) -> tuple[tuple, dict]:
    """The last len(keywords) inputs as keyword arguments."""
    cut = len(inputs) - len(keywords)
    return tuple(inputs[:cut]), dict(zip(keywords, inputs[cut:]))


def _quantize(x: np.ndarray, scale: float, zp: int, qmin: int, qmax: int, dtype) -> np.ndarray:
    """ExecuTorch's portable quantize_per_tensor, written with torch's float32 ops."""
    t = torch.from_numpy(x).float()
    inv = torch.tensor(1.0, dtype=torch.float32) / torch.tensor(scale, dtype=torch.float32)
    q = torch.round(t * inv).to(torch.int64) + zp  # torch.round: half to even, as nearbyint
    return torch.clamp(q, qmin, qmax).to(dtype).numpy()


def _dequantize(q: np.ndarray, scale: float, zp: int) -> np.ndarray:
    t = torch.from_numpy(q).to(torch.int32) - zp
    return (t.to(torch.float32) * torch.tensor(scale, dtype=torch.float32)).numpy()


def _boundary_qparams(edge) -> tuple[list, list]:
    """The quantize nodes fed by the method's inputs and the dequantize nodes feeding its
    outputs, as (scale, zero point, qmin, qmax, torch dtype), in input / output order."""
    gm = edge.exported_program().graph_module
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    user_inputs = [n for n in placeholders if n.users]
    outputs = list(gm.graph.output_node().args[0])
    qin, qout = [], []
    for node in user_inputs:
        (user,) = node.users
        assert "quantize_per_tensor" in str(user.target), user.target
        qin.append(tuple(user.args[1:6]))
    for node in outputs:
        assert "dequantize_per_tensor" in str(node.target), node.target
        qout.append(tuple(node.args[1:6]))
    return qin, qout


def exact(tosa_file: str, inputs: tuple, qin: list, qout: list) -> list[np.ndarray]:
    """Quantize, run the delegate's TOSA on tosa_reference_model, dequantize."""
    import tosa_reference_model

    qx = [_quantize(x.numpy(), s, z, lo, hi, dt) for x, (s, z, lo, hi, dt) in zip(inputs, qin)]
    outs, status = tosa_reference_model.run(Path(tosa_file).read_bytes(), qx)
    assert int(status) == 0 or str(status).endswith("VALID"), status
    return [_dequantize(np.asarray(o), s, z) for o, (s, z, _, _, _) in zip(outs, qout)]


def _run_executorch(program: bytes, inputs: tuple) -> list[np.ndarray]:
    import executorch.kernels.quantized  # noqa: F401  (registers the quantized kernels)
    from executorch.runtime import Runtime

    method = Runtime.get().load_program(program).load_method("forward")
    return [o.numpy() for o in method.execute(list(inputs))]


def make(name: str, out: Path) -> None:
    spec = FIXTURES[name]
    folder = out / name
    with tempfile.TemporaryDirectory() as tmp:
        model, inputs = spec["model"](), spec["inputs"]()
        model.eval()
        args, kwargs = _split(inputs, spec.get("keywords", ()))
        with torch.no_grad():
            expected = model(*args, **kwargs)
        expected = expected if isinstance(expected, tuple) else (expected,)
        meta = {"executorch": version("executorch"), "torch": torch.__version__,
                "description": spec["description"]}
        if spec.get("no_delegate"):
            edge = to_edge(torch.export.export(model, inputs))
            program = edge.to_executorch().buffer
            exact_out = None
            runtime_out = _run_executorch(program, inputs)
        else:
            program, _, edge = export(model, inputs, spec["profile"], spec.get("quantize", False), tmp,
                                      spec.get("segments", False), spec.get("keywords", ()))
            meta["profile"] = spec["profile"]
            exact_out = runtime_out = None
            if spec.get("quantize"):
                qin, qout = _boundary_qparams(edge)
                meta["input_qparams"] = [[float(s), int(z), int(lo), int(hi), str(dt)] for s, z, lo, hi, dt in qin]
                meta["output_qparams"] = [[float(s), int(z), int(lo), int(hi), str(dt)] for s, z, lo, hi, dt in qout]
                (tosa,) = glob.glob(os.path.join(tmp, "*.tosa"))
                exact_out = exact(tosa, inputs, qin, qout)
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        (folder / "model.pte").write_bytes(program)
        for k, x in enumerate(inputs):
            np.save(folder / f"input_{k}.npy", x.numpy())
        for k, y in enumerate(expected):
            np.save(folder / f"torch_{k}.npy", y.detach().numpy())
        for k, y in enumerate(exact_out or []):
            np.save(folder / f"exact_{k}.npy", y)
        for k, y in enumerate(runtime_out or []):
            np.save(folder / f"executorch_{k}.npy", y)
        (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"{name}: {len(program)} bytes -> {folder}", flush=True)


def _randn(*shapes, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return lambda: tuple(torch.randn(s, generator=g) for s in shapes)


def _qdq_inputs():
    # values on and around the rounding half-way points of the scales, both signs, and out of
    # the int8 range on both sides
    k = torch.arange(-300, 300, dtype=torch.float32)
    x = torch.cat([k * 0.025, k * 0.05 + 0.0000001, torch.tensor([-1e9, 1e9, 0.0, -0.0])])
    j = torch.arange(-100, 100, dtype=torch.float32)
    y = torch.stack([j * 0.025, j * 0.05, j * 0.0065 + 0.0000001])
    return x, y


FIXTURES = {
    "add_s32": {
        "description": "a + b on int32 tensors, delegated (TOSA-1.0+INT)",
        "model": AddS32, "profile": "TOSA-1.0+INT",
        "inputs": lambda: (torch.randint(-2**30, 2**30, (1, 4, 4, 8), dtype=torch.int32,
                                         generator=torch.Generator().manual_seed(1)),
                           torch.randint(-2**30, 2**30, (1, 4, 4, 8), dtype=torch.int32,
                                         generator=torch.Generator().manual_seed(2))),
    },
    "mv2_fp32": {
        "description": "MobileNetV2 width 0.5, 100 classes, 224x224, fp32, delegated (TOSA-1.0+FP)",
        "model": lambda: mobilenet_v2(0.5, 100), "profile": "TOSA-1.0+FP",
        "inputs": _randn((1, 3, 224, 224), seed=3),
    },
    "qadd": {
        "description": "aot_arm_compiler's qadd (a + a), int8 (TOSA-1.0+INT, --quantize)",
        "model": QuantAdd, "profile": "TOSA-1.0+INT", "quantize": True,
        "inputs": lambda: (torch.rand((13, 3), generator=torch.Generator().manual_seed(4)),),
    },
    "mv2_int8": {
        "description": "MobileNetV2 width 1.0, 1000 classes, 224x224, int8 (TOSA-1.0+INT, --quantize)",
        "model": lambda: mobilenet_v2(1.0, 1000), "profile": "TOSA-1.0+INT", "quantize": True,
        "inputs": _randn((1, 3, 224, 224), seed=5),
    },
    "multi_io": {
        "description": "three inputs of different shapes, three outputs, fp32, delegated",
        "model": MultiIO, "profile": "TOSA-1.0+FP",
        "inputs": _randn((2, 3, 4), (2, 3, 4), (1, 3, 1), seed=6),
    },
    "keyword_inputs": {
        "description": "x * scale + bias with scale and bias passed by keyword, fp32, delegated",
        "model": KeywordInputs, "profile": "TOSA-1.0+FP", "keywords": ("scale", "bias"),
        "inputs": _randn((2, 5), (2, 5), (1, 5), seed=14),
    },
    "two_delegates": {
        "description": "x * 4 + y, trunc on the CPU, then * 0.5 - x: two VGF delegates, fp32",
        "model": TwoDelegates, "profile": "TOSA-1.0+FP",
        "inputs": _randn((2, 8), (2, 8), seed=7),
    },
    "two_delegates_segments": {
        "description": "two_delegates written with extract_delegate_segments=True (extended header)",
        "model": TwoDelegates, "profile": "TOSA-1.0+FP", "segments": True,
        "inputs": _randn((2, 8), (2, 8), seed=7),
    },
    "portable_ops": {
        "description": "data movement and elementwise kernels, float32 and int64, no delegate (ExecuTorch's kernels)",
        "model": PortableOps, "no_delegate": True,
        "inputs": lambda: (torch.randn((2, 3, 4), generator=torch.Generator().manual_seed(8)),
                           torch.randint(-9, 9, (1, 2, 3), generator=torch.Generator().manual_seed(9))),
    },
    "portable_math": {
        "description": "elementwise math, float32 and int32, no delegate (ExecuTorch's kernels)",
        "model": PortableMath, "no_delegate": True,
        "inputs": lambda: (torch.randn((3, 4), generator=torch.Generator().manual_seed(10)) * 2,
                           torch.randn((3, 4), generator=torch.Generator().manual_seed(11)) * 2,
                           torch.randint(-50, 50, (3, 4), dtype=torch.int32,
                                         generator=torch.Generator().manual_seed(12)),
                           torch.randint(1, 9, (3, 4), dtype=torch.int32, generator=torch.Generator().manual_seed(13))
                           * torch.tensor([1, -1, 1, -1], dtype=torch.int32)),
    },
    "qdq_portable": {
        "description": "quantize + dequantize per tensor and per channel, no delegate (ExecuTorch's kernels)",
        "model": QuantDequant, "no_delegate": True, "inputs": _qdq_inputs,
    },
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=sorted(FIXTURES), help="make only these fixtures")
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "fixtures" / "pte")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name in args.only or FIXTURES:
        make(name, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
