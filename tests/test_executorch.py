"""ExecuTorch programs (.pte) made by ExecuTorch 1.5.1's own export (tools/make_pte_fixtures.py):
read, run on the cpu backend, checked against torch eager, the exact quantized computation and
ExecuTorch's own runtime; inspected and run from the command line; malformed ones refused."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyvgf
from pyvgf.errors import ModelInputError, ProgramError, ProgramFormatError, VGFError
from pyvgf.executorch import ProgramModel, read
from pyvgf.executorch.program import KernelCall, Operator
from pyvgf.format import VGF
from pyvgf.format import read as read_vgf

FIXTURES = Path(__file__).parent / "fixtures" / "pte"
ALL = sorted(p.name for p in FIXTURES.iterdir() if (p / "model.pte").is_file())
SMALL = [name for name in ALL if (FIXTURES / name / "model.pte").stat().st_size < 100_000]

FLOAT_RTOL = 1e-4
"""Float programs: |pyvgf - torch| <= FLOAT_RTOL * max|torch| (spec/executorch.md)."""
WITHIN_ONE_ULP = {("portable_math", 3)}
"""tanh: ExecuTorch calls the C library's tanhf, which is not correctly rounded; pyvgf rounds
the float64 tanh, within one unit in the last place of it (spec/executorch.md)."""
QUANT_COSINE = 0.95
"""Quantized programs against the float model in torch: cosine similarity at least this."""


def arrays(name: str, kind: str) -> list[np.ndarray]:
    files = sorted((FIXTURES / name).glob(f"{kind}_*.npy"), key=lambda p: int(p.stem.split("_")[1]))
    return [np.load(f) for f in files]


def meta(name: str) -> dict:
    return json.loads((FIXTURES / name / "meta.json").read_text())


@pytest.fixture(scope="module")
def loaded():
    models: dict[str, ProgramModel] = {}

    def get(name: str) -> ProgramModel:
        if name not in models:
            models[name] = pyvgf.load(FIXTURES / name / "model.pte")
        return models[name]

    yield get
    for model in models.values():
        model.close()


def test_fixtures_are_there():
    assert {"add_s32", "mv2_fp32", "qadd", "mv2_int8", "multi_io", "two_delegates"} <= set(ALL)


@pytest.mark.parametrize("name", ALL)
def test_runs_like_torch(loaded, name):
    model = loaded(name)
    inputs = arrays(name, "input")
    kept = [x.copy() for x in inputs]
    outputs = model.run(inputs)
    expected = arrays(name, "torch")
    assert len(outputs) == len(expected)
    for out, want, info in zip(outputs, expected, model.outputs):
        assert out.shape == want.shape == info.shape
        assert out.dtype == info.dtype
        if "input_qparams" in meta(name) or name == "qdq_portable":
            continue  # checked exactly below
        if out.dtype.kind == "f":
            bound = FLOAT_RTOL * float(np.abs(want).max())
            assert float(np.abs(out - want).max()) <= bound
        else:
            assert np.array_equal(out, want)
    for x, k in zip(inputs, kept):
        assert np.array_equal(x, k)  # inputs are never modified


@pytest.mark.parametrize("name", [n for n in ALL if (FIXTURES / n / "exact_0.npy").exists()])
def test_quantized_program_is_exact(loaded, name):
    """Quantize as ExecuTorch does, the delegate's TOSA on tosa_reference_model, dequantize:
    equal. Against the float model in torch: close in direction."""
    outputs = loaded(name).run(arrays(name, "input"))
    for out, exact, want in zip(outputs, arrays(name, "exact"), arrays(name, "torch")):
        assert np.array_equal(out, exact)
        cosine = float(np.dot(out.ravel(), want.ravel()) / np.linalg.norm(out) / np.linalg.norm(want))
        assert cosine >= QUANT_COSINE


def test_qadd_within_one_output_step_of_torch(loaded):
    (out,) = loaded("qadd").run(arrays("qadd", "input"))
    (want,) = arrays("qadd", "torch")
    scale = meta("qadd")["output_qparams"][0][0]
    assert float(np.abs(out - want).max()) <= scale


@pytest.mark.parametrize("name", [n for n in ALL if (FIXTURES / n / "executorch_0.npy").exists()])
def test_portable_kernels_equal_executorch_runtime(loaded, name):
    """qdq_portable: quantize/dequantize per tensor and per channel, on and around every rounding
    half-way point and past the int8 range. portable_ops: data movement (with a static view
    ExecuTorch plans at its base's bytes) and elementwise math on float32 and int64.
    portable_math: more elementwise math on float32 and int32. Bit-equal to ExecuTorch's own
    runtime (tanh within one ulp)."""
    outputs = loaded(name).run(arrays(name, "input"))
    expected = arrays(name, "executorch")
    assert len(outputs) == len(expected)
    for k, (out, want) in enumerate(zip(outputs, expected)):
        assert out.dtype == want.dtype
        if (name, k) in WITHIN_ONE_ULP:
            assert np.abs(out.view(np.int32).astype(np.int64) - want.view(np.int32)).max() <= 1
        else:
            assert np.array_equal(out, want), (name, k)


def test_portable_fixtures_cover_the_cpu_kernels():
    kernels = set()
    for name in ("qdq_portable", "portable_ops", "two_delegates"):
        method = read(FIXTURES / name / "model.pte").method()
        kernels |= {method.operators[i.op_index].qualified for i in method.instructions if isinstance(i, KernelCall)}
    assert {"aten::trunc.out", "aten::split_with_sizes_copy.out", "aten::permute_copy.out", "aten::cat.out",
            "quantized_decomposed::quantize_per_channel.out", "dim_order_ops::_to_dim_order_copy.out"} <= kernels


def test_quantized_model_interface(loaded):
    model = loaded("mv2_int8")
    assert [(i.shape, i.dtype) for i in model.inputs] == [((1, 3, 224, 224), np.float32)]
    assert [(o.shape, o.dtype) for o in model.outputs] == [((1, 1000), np.float32)]
    m = meta("mv2_int8")
    (qin,), (qout,) = model.input_quantization, model.output_quantization
    assert [qin.scale, qin.zero_point, qin.quant_min, qin.quant_max] == m["input_qparams"][0][:4]
    assert [qout.scale, qout.zero_point, qout.quant_min, qout.quant_max] == m["output_qparams"][0][:4]
    assert qin.dtype == np.int8 and qin.axis is None
    (vgf,) = model.delegate_vgfs
    assert isinstance(vgf, VGF)
    (delegate,) = model.delegates
    assert delegate.inputs[0].dtype == np.int8 and delegate.outputs[0].dtype == np.int8


def test_per_channel_quantization_parameters(loaded):
    model = loaded("qdq_portable")
    q = model.input_quantization[1]
    assert q.axis == 0
    assert np.array_equal(q.scale, [0.05, 0.1, 0.013]) and np.array_equal(q.zero_point, [3, -2, 0])
    assert model.output_quantization[0] is None and model.output_quantization[3] == q


@pytest.mark.parametrize("name", ["two_delegates", "two_delegates_segments"])
def test_two_delegates_with_a_kernel_between(loaded, name):
    program = read(FIXTURES / name / "model.pte")
    method = program.method()
    kinds = [type(i).__name__ for i in method.instructions]
    assert kinds == ["DelegateCall", "KernelCall", "DelegateCall"]
    assert method.operators[method.instructions[1].op_index].qualified == "aten::trunc.out"
    assert [d.location for d in method.delegates] == (["segment"] * 2 if "segments" in name else ["inline"] * 2)
    assert program.extended_header == ("segments" in name)
    assert len(loaded(name).delegates) == 2


def test_inputs_by_name_and_bad_inputs(loaded):
    model = loaded("multi_io")
    inputs = arrays("multi_io", "input")
    by_name = model.run({info.name: x for info, x in zip(model.inputs, inputs)})
    for a, b in zip(by_name, model.run(inputs)):
        assert np.array_equal(a, b)
    with pytest.raises(ModelInputError, match="input_2"):
        model.run(inputs[:2] + [np.zeros((2, 3, 4), np.float32)])
    with pytest.raises(ModelInputError, match="expected 3 inputs"):
        model.run(inputs[:2])


def test_keyword_inputs_are_named(loaded):
    model = loaded("keyword_inputs")
    assert [i.name for i in model.inputs] == ["input_0", "scale", "bias"]
    x, scale, bias = arrays("keyword_inputs", "input")
    (out,) = model.run({"bias": bias, "input_0": x, "scale": scale})
    assert np.array_equal(out, arrays("keyword_inputs", "torch")[0])


def test_outputs_are_new_arrays(loaded):
    model = loaded("two_delegates")
    inputs = arrays("two_delegates", "input")
    first = model.run(inputs)
    first[0][...] = 7
    assert not np.array_equal(model.run(inputs)[0], first[0])


def test_unknown_kernel_is_named():
    program = read(FIXTURES / "two_delegates" / "model.pte")
    method = program.method()
    renamed = dataclasses.replace(method, operators=[Operator("aten::erfinv", "out")])
    program = dataclasses.replace(program, methods=[renamed])
    with pytest.raises(ProgramError, match=r"instruction 1 \(aten::erfinv.out\): pyvgf has no kernel aten::erfinv.out"):
        ProgramModel(program)


def test_other_backend_is_named():
    program = read(FIXTURES / "add_s32" / "model.pte")
    method = program.method()
    other = dataclasses.replace(method.delegates[0], backend_id="XnnpackBackend")
    program = dataclasses.replace(program, methods=[dataclasses.replace(method, delegates=[other])])
    with pytest.raises(ProgramError, match="XnnpackBackend"):
        ProgramModel(program)


def test_kernel_argument_count_checked():
    program = read(FIXTURES / "two_delegates" / "model.pte")
    method = program.method()
    instructions = list(method.instructions)
    instructions[1] = KernelCall(instructions[1].op_index, instructions[1].args[:1])
    program = dataclasses.replace(program, methods=[dataclasses.replace(method, instructions=instructions)])
    with pytest.raises(ProgramError, match="instruction 1"):
        ProgramModel(program)


def test_value_read_before_written_is_refused():
    program = read(FIXTURES / "two_delegates" / "model.pte")
    method = program.method()
    swapped = [method.instructions[1], method.instructions[0], method.instructions[2]]
    program = dataclasses.replace(program, methods=[dataclasses.replace(method, instructions=swapped)])
    with pytest.raises(ProgramError, match="instruction 0 .* reads value 2 before any instruction writes it"):
        ProgramModel(program)


def test_planned_tensor_must_fit_its_buffer():
    from pyvgf.executorch.program import TensorSpec, _check_planned
    from pyvgf.executorch.schema import ScalarType

    spec = TensorSpec(ScalarType.FLOAT, (13, 1065622559), (0, 1), False, allocation=(1, 0))
    with pytest.raises(ProgramFormatError, match="does not fit memory 1 of 256 bytes"):
        _check_planned(3, spec, (0, 256), "method 'forward'")
    with pytest.raises(ProgramFormatError, match="planned in memory 2 of 2"):
        _check_planned(3, dataclasses.replace(spec, allocation=(2, 0)), (0, 256), "method 'forward'")


def test_not_a_program():
    with pytest.raises(ProgramFormatError, match="not an ExecuTorch program"):
        read(b"VGF1" + b"\0" * 124)
    with pytest.raises(ProgramFormatError, match="not an ExecuTorch program"):
        read(b"ET1")


def test_truncated_programs_are_refused():
    data = (FIXTURES / "qadd" / "model.pte").read_bytes()
    for size in range(0, len(data), 97):
        with pytest.raises(VGFError):
            pyvgf.load(data[:size])


def test_extended_header_checked():
    data = bytearray((FIXTURES / "two_delegates_segments" / "model.pte").read_bytes())
    assert data[8:12] == b"eh00"
    bad = bytearray(data)
    bad[16:24] = (len(data) + 1).to_bytes(8, "little")
    with pytest.raises(ProgramFormatError, match="program size"):
        read(bytes(bad))
    bad = bytearray(data)
    bad[24:32] = (len(data) * 2).to_bytes(8, "little")
    with pytest.raises(ProgramFormatError, match="segment base offset"):
        read(bytes(bad))


def _mutate(data: bytes, draw) -> bytes:
    out = bytearray(data)
    kind = draw(st.integers(0, 3))
    if kind == 0:
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(out) - 1))
            out[i] ^= 1 << draw(st.integers(0, 7))
    elif kind == 1:
        out = out[: draw(st.integers(0, len(out) - 1))]
    elif kind == 2:
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(out) // 4 - 1)) * 4
            value = draw(st.sampled_from([0, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 1, len(out)]))
            out[i : i + 4] = value.to_bytes(4, "little")
    else:
        i = draw(st.integers(0, len(out) // 4 - 1)) * 4
        out[i : i + 4] = draw(st.integers(0, 2**32 - 1)).to_bytes(4, "little")
    return bytes(out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_programs_raise_pyvgf_errors_only(data):
    """Mutations of real programs: they load and run, or raise a pyvgf error; nothing else."""
    name = data.draw(st.sampled_from(SMALL))
    mutated = _mutate((FIXTURES / name / "model.pte").read_bytes(), data.draw)
    try:
        with pyvgf.load(mutated) as model:
            model.run([np.zeros(i.shape, i.dtype) for i in model.inputs])
    except VGFError:
        pass


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pyvgf", *args], check=False, capture_output=True, text=True,
                          timeout=120)


def test_cli_inspect_summary():
    result = _cli("inspect", str(FIXTURES / "qadd" / "model.pte"))
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "method 'forward'" in text
    assert "delegate 0: VgfBackend" in text
    assert "quantized_decomposed::quantize_per_tensor.out" in text
    order = [line.split()[1] for line in text.splitlines() if line.strip()[:1].isdigit()]
    assert order == ["kernel", "delegate", "kernel"]


def test_cli_inspect_extract(tmp_path):
    result = _cli("inspect", str(FIXTURES / "two_delegates_segments" / "model.pte"), "--extract", str(tmp_path))
    assert result.returncode == 0, result.stderr
    files = sorted(tmp_path.glob("*.vgf"))
    assert [f.name for f in files] == ["forward_delegate_0.vgf", "forward_delegate_1.vgf"]
    program = read(FIXTURES / "two_delegates_segments" / "model.pte")
    for f, delegate in zip(files, program.method().delegates):
        assert f.read_bytes() == delegate.data.tobytes()
        assert isinstance(read_vgf(f), VGF)


def test_cli_run(tmp_path):
    folder = FIXTURES / "multi_io"
    inputs = [f"--input={folder / f'input_{k}.npy'}" for k in range(3)]
    result = _cli("run", str(folder / "model.pte"), *inputs, "--output-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    for k, want in enumerate(arrays("multi_io", "torch")):
        assert np.allclose(np.load(tmp_path / f"output_{k}.npy"), want, rtol=0, atol=FLOAT_RTOL * np.abs(want).max())


def test_cli_vgf_options_on_a_program_are_one_line():
    result = _cli("inspect", str(FIXTURES / "qadd" / "model.pte"), "--json")
    assert result.returncode == 1
    assert result.stderr.startswith("pyvgf inspect: a .pte takes --extract DIR")
    assert len(result.stderr.splitlines()) == 1


def test_cli_malformed_program_is_one_line(tmp_path):
    bad = tmp_path / "bad.pte"
    bad.write_bytes((FIXTURES / "qadd" / "model.pte").read_bytes()[:200])
    result = _cli("inspect", str(bad))
    assert result.returncode == 1
    assert result.stderr.startswith("pyvgf inspect:") and "Traceback" not in result.stderr


@pytest.mark.vulkan
@pytest.mark.parametrize("name", ["qadd", "two_delegates"])
def test_delegates_on_the_vulkan_backend(name):
    """The same program with its delegates on Vulkan (the ML emulation layer): the quantized one
    equal to the exact computation, the float one equal to torch (elementwise)."""
    from support.vulkan import require_vulkan

    require_vulkan()
    with pyvgf.load(FIXTURES / name / "model.pte", backend="vulkan") as model:
        assert model.backend == "vulkan"
        outputs = model.run(arrays(name, "input"))
    kind = "exact" if (FIXTURES / name / "exact_0.npy").exists() else "torch"
    for out, want in zip(outputs, arrays(name, kind)):
        assert np.array_equal(out, want)


def test_runs_from_several_threads(loaded):
    from concurrent.futures import ThreadPoolExecutor

    model = loaded("two_delegates")
    rng = np.random.default_rng(3)
    cases = [[rng.standard_normal((2, 8)).astype(np.float32) for _ in range(2)] for _ in range(16)]
    alone = [model.run(c) for c in cases]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(model.run, cases))
    for a, b in zip(alone, together):
        assert all(np.array_equal(x, y) for x, y in zip(a, b))
