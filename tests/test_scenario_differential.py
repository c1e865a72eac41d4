"""`pyvgf scenario` on cpu and vulkan against Arm's scenario_runner + the ML emulation layer on
lavapipe, from the same scenario file: the same output files, integers bit-exact.

Scenarios: vgf_dump's template (written by `pyvgf inspect --scenario-template`, checked equal to
vgf_dump's in test_scenario.py) of generated and real models with random inputs, and a
hand-written scenario using memory aliasing, explicit barriers, a compute dispatch and several
dispatches in order.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import fixtures  # tools/fixtures.py
import references  # tools/references.py
from pyvgf import scenario
from pyvgf.cli import main
from pyvgf.errors import ScenarioError
from pyvgf.format import read
from support.runtime import doubling_shader
from support.scenario_shaders import double
from support.vulkan import require_vulkan

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.vulkan




def _reference(scenario_json: Path, out: Path) -> None:
    out.mkdir()
    cmd, env = references.scenario_command(scenario_json, out)
    proc = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _pyvgf(*args: str) -> str:
    """`pyvgf ARGS` in this process (the CLI's code, without a new interpreter's start-up)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    assert status == 0, err.getvalue()
    return out.getvalue()


def _files(folder: Path) -> dict[str, np.ndarray]:
    return {p.name: np.load(p) for p in sorted(folder.iterdir())}


def _assert_same(ref: dict[str, np.ndarray], got: dict[str, np.ndarray], exact_floats: bool = False) -> None:
    assert sorted(got) == sorted(ref) and ref
    for name, want in ref.items():
        have = got[name]
        assert (have.dtype, have.shape) == (want.dtype, want.shape), name
        if want.dtype.kind == "f" and not exact_floats:
            np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-5, err_msg=name)
        else:
            np.testing.assert_array_equal(have.view(np.uint8), want.view(np.uint8), err_msg=name)


def _fill_inputs(folder: Path, scenario_json: Path, seed: int) -> None:
    """Random data in each input placeholder the template names (in place of the zeros)."""
    rng = np.random.default_rng(seed)
    for entry in json.loads(scenario_json.read_text())["resources"]:
        ((kind, body),) = entry.items()
        if kind != "tensor" or "src" not in body:
            continue
        path = folder / body["src"]
        zeros = np.load(path)
        if zeros.dtype.kind == "V":
            values = rng.integers(0, 256, zeros.nbytes, dtype=np.uint8).view(zeros.dtype).reshape(zeros.shape)
        elif zeros.dtype.kind == "b":
            values = rng.integers(0, 2, zeros.shape).astype(bool)
        elif zeros.dtype.kind in "iu":
            info = np.iinfo(zeros.dtype)
            values = rng.integers(max(info.min, -100), min(info.max, 100), zeros.shape,
                                  endpoint=True).astype(zeros.dtype)
        else:
            values = rng.standard_normal(zeros.shape).astype(zeros.dtype)
        with open(path, "wb") as f:
            np.save(f, values)


def _template(vgf: Path, folder: Path, seed: int = 0) -> Path:
    scenario_json = Path(_pyvgf("inspect", str(vgf), "--scenario-template", str(folder)).strip())
    _fill_inputs(folder, scenario_json, seed)
    return scenario_json


def _differ(scenario_json: Path, tmp_path: Path, backends=("cpu", "vulkan"), exact_floats=False, **kwargs) -> dict:
    require_vulkan()
    _reference(scenario_json, tmp_path / "ref")
    ref = _files(tmp_path / "ref")
    for backend in backends:
        _pyvgf("scenario", str(scenario_json), "--output", str(tmp_path / backend), "--backend", backend,
               *kwargs.get(backend, ()))
        _assert_same(ref, _files(tmp_path / backend), exact_floats)
    return ref


QUICK = ["add_f32", "runtime_int8", "runtime_bool", "runtime_bf16"]
"""Generated models checked in the default suite; the rest are `slow` (seconds each on 2 cores)."""
MORE = ["runtime_int16", "runtime_multi_io", "runtime_int32", "spirv_int8_conv_rescale", "runtime_fp16",
        "runtime_int64", "runtime_constants"]


@pytest.mark.parametrize("name", QUICK + [pytest.param(n, marks=pytest.mark.slow) for n in MORE])
def test_template_of_generated_model(vgf_model, tmp_path: Path, name: str) -> None:
    folder = tmp_path / "scenario"
    scenario_json = _template(vgf_model(name), folder)
    ref = _differ(scenario_json, tmp_path, exact_floats=name == "add_f32")
    assert any(np.any(a) for a in ref.values())


def test_dispatch_vgf_is_dispatch_graph(vgf_model, tmp_path: Path) -> None:
    """scenario_runner 0.11 names the VGF dispatch dispatch_vgf; dispatch_graph is its old name."""
    folder = tmp_path / "scenario"
    scenario_json = _template(vgf_model("runtime_int8"), folder, seed=4)
    doc = json.loads(scenario_json.read_text())
    doc["commands"] = [{"dispatch_vgf": doc["commands"][0]["dispatch_graph"]}]
    scenario_json.write_text(json.dumps(doc))
    _differ(scenario_json, tmp_path)


def test_template_of_segmented_model_with_compute(vgf_model, tmp_path: Path) -> None:
    """graph -> SPIR-V compute -> graph: the template substitutes the module's own code (written
    beside it by pyvgf); the cpu backend runs a Python stand-in found by module name."""
    vgf = vgf_model("runtime_segments")
    folder = tmp_path / "scenario"
    scenario_json = _template(vgf, folder)
    assert [m.name for m in read(vgf).modules if m.type.name == "COMPUTE"] == ["graph_partition_1"]
    _differ(scenario_json, tmp_path, cpu=("--shaders", str(ROOT / "tests" / "support" / "scenario_shaders.py")))


@pytest.mark.slow
def test_real_model_template(real_model: Path, tmp_path: Path) -> None:
    scenario_json = _template(real_model, tmp_path / "scenario", seed=3)
    ref = _differ(scenario_json, tmp_path)
    assert all(a.dtype == np.int8 for a in ref.values())


def scaling_shader() -> np.ndarray:
    """The doubling shader of tests/support/runtime.py with its factor from push constants:
    `layout(push_constant) uniform P { float k; }; out[x] = k * in[x]`, local size 1, storage
    buffers at set 0 bindings 0 and 1 (SPIR-V 1.3, assembled word by word as there)."""
    ids = iter(range(1, 100))
    (void, fn, uint, f32, v3, p_in_v3, gid, rta, block, p_sb_block, src, dst, p_sb_f32, p_in_u32, c0, main, label,
     px, x, pa, a, b, pb, pc_block, p_pc_block, pc, p_pc_f32, pk, k) = (next(ids) for _ in range(29))

    def op(code: int, *operands: int) -> list[int]:
        return [code | (len(operands) + 1) << 16, *operands]

    words = [0x07230203, 0x00010300, 0, 30, 0]
    words += op(17, 1) + op(14, 0, 1)  # OpCapability Shader, OpMemoryModel Logical GLSL450
    words += op(15, 5, main, int.from_bytes(b"main", "little"), 0, gid)  # OpEntryPoint GLCompute
    words += op(16, main, 17, 1, 1, 1)  # OpExecutionMode LocalSize 1 1 1
    words += op(71, gid, 11, 28) + op(71, rta, 6, 4)  # BuiltIn GlobalInvocationId, ArrayStride 4
    words += op(72, block, 0, 35, 0) + op(71, block, 2)  # member Offset 0, Block
    words += op(72, pc_block, 0, 35, 0) + op(71, pc_block, 2)
    for var, binding in ((src, 0), (dst, 1)):
        words += op(71, var, 34, 0) + op(71, var, 33, binding)  # DescriptorSet 0, Binding n
    words += op(19, void) + op(33, fn, void) + op(21, uint, 32, 0) + op(22, f32, 32)
    words += op(23, v3, uint, 3) + op(32, p_in_v3, 1, v3) + op(59, p_in_v3, gid, 1)
    words += op(29, rta, f32) + op(30, block, rta) + op(32, p_sb_block, 12, block)
    words += op(59, p_sb_block, src, 12) + op(59, p_sb_block, dst, 12)
    words += op(32, p_sb_f32, 12, f32) + op(32, p_in_u32, 1, uint)
    words += op(30, pc_block, f32) + op(32, p_pc_block, 9, pc_block) + op(59, p_pc_block, pc, 9)  # PushConstant
    words += op(32, p_pc_f32, 9, f32) + op(43, uint, c0, 0)
    words += op(54, void, main, 0, fn) + op(248, label)
    words += op(65, p_in_u32, px, gid, c0) + op(61, uint, x, px)  # x = gl_GlobalInvocationID.x
    words += op(65, p_pc_f32, pk, pc, c0) + op(61, f32, k, pk)  # k = pc.k
    words += op(65, p_sb_f32, pa, src, c0, x) + op(61, f32, a, pa)  # a = in[x]
    words += op(133, f32, b, a, k)  # b = a * k
    words += op(65, p_sb_f32, pb, dst, c0, x) + op(62, pb, b)  # out[x] = b
    words += op(253) + op(56)  # OpReturn, OpFunctionEnd
    return np.array(words, np.uint32)


def test_compute_with_push_constants_on_vulkan(tmp_path: Path) -> None:
    """dispatch_compute with push_data_ref (a raw_data .npy): vulkan only, the cpu backend's
    stand-ins take no push constants (a ScenarioError naming the command, checked here too)."""
    folder = tmp_path / "scenario"
    folder.mkdir()
    (folder / "scale.spv").write_bytes(scaling_shader().astype("<u4").tobytes())
    x = np.random.default_rng(2).standard_normal(40).astype(np.float32)
    np.save(folder / "x.npy", x)
    np.save(folder / "k.npy", np.array([-3.5], np.float32))
    doc = {
        "resources": [
            {"shader": {"uid": "scale", "src": "scale.spv", "type": "SPIR-V", "push_constants_size": 4}},
            {"raw_data": {"uid": "k", "src": "k.npy"}},
            {"buffer": {"uid": "x", "size": 160, "src": "x.npy", "shader_access": "readonly"}},
            {"buffer": {"uid": "y", "size": 160, "dst": "y.npy", "shader_access": "writeonly"}},
        ],
        "commands": [{"dispatch_compute": {"shader_ref": "scale", "push_data_ref": "k", "rangeND": [40, 1, 1],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "x"},
                                                        {"set": 0, "id": 1, "resource_ref": "y"}]}}],
    }
    scenario_json = folder / "scenario.json"
    scenario_json.write_text(json.dumps(doc))
    ref = _differ(scenario_json, tmp_path, backends=("vulkan",), exact_floats=True)
    np.testing.assert_array_equal(ref["y.npy"].view(np.float32), x * np.float32(-3.5))
    with pytest.raises(ScenarioError, match="push constants") as info:
        scenario.run(scenario.load(scenario_json, tmp_path / "cpu"), "cpu", shaders={"scale": double})
    assert info.value.path == "commands[0].dispatch_compute.push_data_ref"


def _hand_written(folder: Path) -> Path:
    """add(a, b) -> c, c aliased by a buffer, a memory barrier, then the doubling compute shader
    from the buffer into another buffer, and the add again from c: three dispatches in order."""
    add = fixtures.model("add_f32")
    shutil.copyfile(add, folder / "add.vgf")
    (folder / "double.spv").write_bytes(doubling_shader().astype("<u4").tobytes())
    rng = np.random.default_rng(5)
    np.save(folder / "a.npy", rng.standard_normal((1, 4, 4, 8)).astype(np.float32))
    np.save(folder / "b.npy", rng.integers(-8, 8, (1, 4, 4, 8)).astype(np.float32))
    tensor = {"dims": [1, 4, 4, 8], "format": "VK_FORMAT_R32_SFLOAT"}
    bindings = [{"set": 0, "id": i, "resource_ref": r} for i, r in enumerate(("a", "b", "c"))]
    scenario_doc = {
        "resources": [
            {"graph": {"uid": "add", "src": "add.vgf"}},
            {"shader": {"uid": "double", "src": "double.spv", "type": "SPIR-V", "entry": "main"}},
            {"tensor": {"uid": "a", "src": "a.npy", "shader_access": "readonly", **tensor}},
            {"tensor": {"uid": "b", "src": "b.npy", "shader_access": "readonly", **tensor}},
            {"tensor": {"uid": "c", "dst": "c.npy", "shader_access": "readwrite", **tensor,
                        "memory_group": {"id": "shared"}}},
            {"buffer": {"uid": "c_bytes", "size": 512, "shader_access": "readonly", "memory_group": {"id": "shared"}}},
            {"buffer": {"uid": "doubled", "size": 512, "shader_access": "writeonly", "dst": "doubled.npy"}},
            {"tensor": {"uid": "d", "dst": "sub/d.npy", "shader_access": "writeonly", **tensor}},
            {"memory_barrier": {"uid": "graph_to_compute", "src_access": "graph_write",
                                "dst_access": "compute_shader_read", "src_stage": ["graph"], "dst_stage": ["compute"]}},
        ],
        "commands": [
            {"dispatch_graph": {"graph_ref": "add", "bindings": bindings, "implicit_barrier": False}},
            {"dispatch_barrier": {"memory_barrier_refs": ["graph_to_compute"], "image_barrier_refs": [],
                                  "buffer_barrier_refs": []}},
            {"dispatch_compute": {"shader_ref": "double", "rangeND": [128],
                                  "bindings": [{"set": 0, "id": 0, "resource_ref": "c_bytes"},
                                               {"set": 0, "id": 1, "resource_ref": "doubled"}]}},
            {"dispatch_graph": {"graph_ref": "add", "bindings": [bindings[2] | {"id": 0}, bindings[1] | {"id": 1},
                                                                 {"set": 0, "id": 2, "resource_ref": "d"}]}},
            {"mark_boundary": {"resources": ["d"]}},
        ],
    }
    path = folder / "scenario.json"
    path.write_text(json.dumps(scenario_doc, indent=1))
    return path


def test_hand_written_scenario(tmp_path: Path) -> None:
    folder = tmp_path / "scenario"
    folder.mkdir()
    scenario_json = _hand_written(folder)
    for out in ("ref", "cpu", "vulkan"):
        (tmp_path / out / "sub").mkdir(parents=True)
    require_vulkan()
    cmd, env = references.scenario_command(scenario_json, tmp_path / "ref")
    proc = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    plan = scenario.load(scenario_json, tmp_path / "cpu")
    scenario.run(plan, "cpu", shaders={"double": double})
    scenario.run(scenario.load(scenario_json, tmp_path / "vulkan"), "vulkan")
    a, b = np.load(folder / "a.npy"), np.load(folder / "b.npy")
    results = {}
    for out in ("ref", "cpu", "vulkan"):
        c = np.load(tmp_path / out / "c.npy")
        doubled = np.load(tmp_path / out / "doubled.npy")
        d = np.load(tmp_path / out / "sub" / "d.npy")
        assert doubled.dtype == np.int8 and doubled.shape == (512,)
        np.testing.assert_array_equal(c, a + b)
        np.testing.assert_array_equal(doubled.view(np.float32).reshape(c.shape), 2 * (a + b))
        np.testing.assert_array_equal(d, c + b)
        results[out] = (c, doubled, d)
    for out in ("cpu", "vulkan"):
        for want, have in zip(results["ref"], results[out]):
            assert want.dtype == have.dtype
            np.testing.assert_array_equal(want, have)


def test_glsl_module_on_vulkan_is_an_error_naming_the_command(vgf_model, tmp_path: Path) -> None:
    """format_shaders substitutes GLSL and HLSL sources: the vulkan backend runs SPIR-V only."""
    require_vulkan()
    scenario_json = _template(vgf_model("format_shaders"), tmp_path / "scenario")
    with pytest.raises(ScenarioError, match="GLSL source") as info:
        scenario.run(scenario.load(scenario_json, tmp_path / "out"), "vulkan")
    assert info.value.path == "commands[0].dispatch_graph"


def _edge(folder: Path, case: str) -> Path:
    """add_f32 and the doubling shader, with one thing at the edge of what scenario_runner takes."""
    add = fixtures.model("add_f32")
    (folder / "double.spv").write_bytes(doubling_shader().astype("<u4").tobytes())
    arrays = {"a": np.ones((1, 4, 4, 8), np.float32), "a_i32": np.ones((1, 4, 4, 8), np.int32),
              "a_flat": np.ones(128, np.float32), "x": np.ones((4, 32), np.float32), "x_short": np.ones(64, np.float32)}
    for name, array in arrays.items():
        np.save(folder / f"{name}.npy", array)
    tensor = {"dims": [1, 4, 4, 8], "format": "VK_FORMAT_R32_SFLOAT", "shader_access": "readwrite"}
    a_src = {"int32_src": "a_i32.npy", "flat_src": "a_flat.npy"}.get(case, "a.npy")
    bindings = [{"set": 0, "id": i, "resource_ref": r} for i, r in enumerate("abc")]
    if case == "unknown_binding_id":
        bindings.append({"set": 0, "id": 9, "resource_ref": "a"})
    doc = {
        "resources": [
            {"graph": {"uid": "g", "src": str(add)}},
            {"shader": {"uid": "double", "src": "double.spv", "type": "SPIR-V"}},
            {"tensor": {"uid": "a", "src": a_src, **tensor}},
            {"tensor": {"uid": "b", "src": "a.npy", **tensor}},
            {"tensor": {"uid": "c", "dst": "c.npy", **tensor}},
            {"buffer": {"uid": "x", "size": 512, "src": "x_short.npy" if case == "buffer_src_short" else "x.npy",
                        "shader_access": "readonly"}},
            {"buffer": {"uid": "y", "size": 512, "dst": "y.npy", "shader_access": "writeonly"}},
        ],
        "commands": [
            {"dispatch_graph": {"graph_ref": "g", "bindings": bindings}},
            {"dispatch_compute": {"shader_ref": "double", "rangeND": [128],
                                  "bindings": [{"set": 0, "id": 0, "resource_ref": "x"},
                                               {"set": 0, "id": 1, "resource_ref": "y"}]}},
        ],
    }
    path = folder / "scenario.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(("case", "accepted"), [("plain", True), ("int32_src", True), ("flat_src", False),
                                                ("buffer_src_short", False), ("unknown_binding_id", False)])
def test_what_scenario_runner_accepts(tmp_path: Path, case: str, accepted: bool) -> None:
    """Both accept or both refuse: a tensor's .npy of another dtype of the same size is taken
    (bytes are copied), one of another shape is not; a buffer's bytes must fill it; a binding id
    that is no model input or output is an error."""
    require_vulkan()
    folder = tmp_path / "scenario"
    folder.mkdir()
    scenario_json = _edge(folder, case)
    cmd, env = references.scenario_command(scenario_json, tmp_path / "ref")
    proc = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True, timeout=600)
    assert (proc.returncode == 0) == accepted, proc.stdout + proc.stderr
    plan = scenario.load(scenario_json, tmp_path / "cpu")
    if accepted:
        scenario.run(plan, "cpu", shaders={"double": double})
        _assert_same(_files(tmp_path / "ref"), _files(tmp_path / "cpu"), exact_floats=True)
    else:
        with pytest.raises(ScenarioError):
            scenario.run(plan, "cpu", shaders={"double": double})


def test_memory_group_at_an_offset(tmp_path: Path) -> None:
    """The graph's output tensor lives 512 bytes into a memory group whose buffer covers it: the
    buffer's upper half holds the tensor's bytes, in scenario_runner and in pyvgf."""
    require_vulkan()
    folder = tmp_path / "scenario"
    folder.mkdir()
    doc = json.loads(_edge(folder, "plain").read_text())
    doc["resources"][4]["tensor"]["memory_group"] = {"id": "shared", "offset": 512}
    doc["resources"].append({"buffer": {"uid": "whole", "size": 1024, "dst": "whole.npy", "shader_access": "readonly",
                                        "memory_group": {"id": "shared"}}})
    scenario_json = folder / "scenario.json"
    scenario_json.write_text(json.dumps(doc))
    _reference(scenario_json, tmp_path / "ref")
    scenario.run(scenario.load(scenario_json, tmp_path / "cpu"), "cpu", shaders={"double": double})
    scenario.run(scenario.load(scenario_json, tmp_path / "vulkan"), "vulkan")
    for out in ("ref", "cpu", "vulkan"):
        c = np.load(tmp_path / out / "c.npy")
        whole = np.load(tmp_path / out / "whole.npy")
        np.testing.assert_array_equal(c, np.full((1, 4, 4, 8), 2, np.float32))
        np.testing.assert_array_equal(whole[512:].view(np.float32).reshape(c.shape), c)
