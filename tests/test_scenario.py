"""pyvgf.scenario: the template equals vgf_dump's, malformed files are ScenarioErrors naming the
JSON path (fuzzed), and the CLI takes scenario_runner's flags. The runs against scenario_runner
are in test_scenario_differential.py."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import fixtures  # tools/fixtures.py
import pyvgf
from pyvgf import scenario
from pyvgf.cli import main, scenario_runner_main
from pyvgf.errors import ScenarioError, VGFError
from pyvgf.format import read
from support.runtime import doubling_shader
from support.scenario_shaders import SHADERS, double

ROOT = Path(__file__).resolve().parents[1]
MODELS = sorted(p.stem for p in fixtures.MODELS.glob("*.mlir"))


def _vgf_dump_template(vgf: Path, tmp_path: Path, *extra: str) -> str:
    out = tmp_path / "vgf_dump.json"
    subprocess.run([fixtures.tool("vgf_dump"), "-i", str(vgf), "--scenario-template", "-o", str(out), *extra],
                   check=True, capture_output=True)
    return out.read_text()


@pytest.mark.parametrize("name", MODELS)
def test_template_equals_vgf_dump(vgf_model, tmp_path: Path, name: str) -> None:
    vgf = vgf_model(name)
    want = _vgf_dump_template(vgf, tmp_path)
    got = scenario.template(read(vgf), vgf.name)
    assert got == json.loads(want)
    assert scenario.template.__module__ and scenario.write_template(read(vgf), vgf, tmp_path / "t").read_text() == want


def test_template_with_boundaries_and_real_models(real_model: Path, tmp_path: Path) -> None:
    want = _vgf_dump_template(real_model, tmp_path, "--scenario-template-add-boundaries")
    assert scenario.template(read(real_model), real_model.name, boundaries=True) == json.loads(want)


def test_inspect_scenario_template_folder_runs(vgf_model, tmp_path: Path) -> None:
    vgf = vgf_model("format_compute_sets")
    out = subprocess.run([sys.executable, "-m", "pyvgf", "inspect", str(vgf), "--scenario-template", str(tmp_path)],
                         check=True, capture_output=True, text=True, cwd=ROOT).stdout.strip()
    doc = json.loads(Path(out).read_text())
    assert doc == json.loads(_vgf_dump_template(vgf, tmp_path))
    for entry in doc["resources"]:
        ((kind, body),) = entry.items()
        if "src" in body:
            assert (tmp_path / body["src"]).is_file()
        if kind == "buffer" and "src" in body:
            array = np.load(tmp_path / body["src"])
            assert array.nbytes == body["size"] and not array.any()
    assert (tmp_path / vgf.name).read_bytes() == vgf.read_bytes()


# -- parsing: clear errors naming the JSON path ------------------------------------------------


def _base(tmp_path: Path) -> dict:
    """add_f32 (a copy in tmp_path, so that no test, fuzzed or not, can write the shared
    fixture) of two tensors from a.npy, its result written to c.npy."""
    vgf = tmp_path / "add_f32.vgf"
    shutil.copyfile(fixtures.model("add_f32"), vgf)
    np.save(tmp_path / "a.npy", np.ones((1, 4, 4, 8), np.float32))
    np.save(tmp_path / "flat.npy", np.ones(128, np.float32))
    np.save(tmp_path / "int8.npy", np.ones((1, 4, 4, 8), np.int8))
    tensor = {"dims": [1, 4, 4, 8], "format": "VK_FORMAT_R32_SFLOAT", "shader_access": "readonly"}
    return {
        "resources": [
            {"graph": {"uid": "g", "src": str(vgf)}},
            {"tensor": {"uid": "a", "src": "a.npy", **tensor}},
            {"tensor": {"uid": "b", "src": "a.npy", **tensor}},
            {"tensor": {"uid": "c", "dst": "c.npy", **tensor}},
            {"memory_barrier": {"uid": "m", "src_access": "graph_write", "dst_access": "memory_read"}},
        ],
        "commands": [
            {"dispatch_graph": {"graph_ref": "g", "bindings": [{"set": 0, "id": i, "resource_ref": r}
                                                               for i, r in enumerate("abc")]}},
            {"dispatch_barrier": {"memory_barrier_refs": ["m"], "image_barrier_refs": [], "buffer_barrier_refs": []}},
        ],
    }


@pytest.mark.parametrize("reads", ["g", "a"], ids=["the-vgf", "an-input"])
def test_a_dst_that_the_scenario_reads_is_refused(tmp_path: Path, reads: str) -> None:
    """An output written over an input (here the VGF itself, or a tensor's .npy) would destroy
    it: the scenario is refused at parse, naming the dst, and the file is left as it was."""
    doc = _base(tmp_path)
    source = {"g": tmp_path / "add_f32.vgf", "a": tmp_path / "a.npy"}[reads]
    before = source.read_bytes()
    doc["resources"][3]["tensor"]["dst"] = str(source)
    with pytest.raises(ScenarioError, match="which the scenario reads") as info:
        scenario.run(scenario.parse(doc, tmp_path), "cpu")
    assert info.value.path == "resources[3].tensor.dst"
    assert source.read_bytes() == before


def test_base_scenario_runs_on_cpu(tmp_path: Path) -> None:
    plan = scenario.parse(_base(tmp_path), tmp_path)
    result = scenario.run(plan, "cpu", repeat=2)
    assert result.outputs == [tmp_path / "c.npy"] and len(result.repeat_s) == 2
    np.testing.assert_array_equal(np.load(tmp_path / "c.npy"), np.full((1, 4, 4, 8), 2, np.float32))


def _edit(doc: dict, path: str, value) -> dict:
    doc = copy.deepcopy(doc)
    keys = [int(k) if k.isdigit() else k for k in path.replace("[", ".").replace("]", "").split(".")]
    target = doc
    for key in keys[:-1]:
        target = target[key]
    if value is KeyError:
        del target[keys[-1]]
    elif isinstance(target, list) and keys[-1] == len(target):
        target.append(value)
    else:
        target[keys[-1]] = value
    return doc


@pytest.mark.parametrize(("path", "value", "where", "message"), [
    ("commands[0].dispatch_graph.push_constants", [{"push_data_ref": "x", "shader_target": "t"}],
     "commands[0].dispatch_graph.push_constants[0].push_data_ref", "names no raw_data resource"),
    ("commands[1]", {"dispatch_optical_flow": {}}, "commands[1].dispatch_optical_flow", "not supported"),
    ("commands[1]", {"dispatch_spirv_graph": {}}, "commands[1].dispatch_spirv_graph", "not supported"),
    ("commands[1]", {"launch": {}}, "commands[1]", "unknown command 'launch'"),
    ("commands[1]", {"dispatch_barrier": {}, "mark_boundary": {}}, "commands[1]", "exactly one kind"),
    ("resources[1].tensor.dims", [1, 0], "resources[1].tensor.dims[1]", "must be in 1.."),
    ("resources[1].tensor.dims", "4", "resources[1].tensor.dims", "must be an array"),
    ("resources[1].tensor.format", "VK_FORMAT_R8G8B8A8_UNORM", "resources[1].tensor.format", "one-component"),
    ("resources[1].tensor.format", "R32", "resources[1].tensor.format", "not a VkFormat name"),
    ("resources[1].tensor.shader_access", "sometimes", "resources[1].tensor.shader_access", "must be one of"),
    ("resources[1].tensor.uid", "b", "resources[2].tensor.uid", "used twice"),
    ("resources[1].tensor.colour", 1, "resources[1].tensor", "unknown field 'colour'"),
    ("resources[1].tensor.uid", KeyError, "resources[1].tensor", "missing required field 'uid'"),
    ("resources[4]", {"image": {}}, "resources[4].image", "not supported"),
    ("resources[4]", {"shader": {"uid": "s", "src": "s.spv", "type": "SPIR-V", "specialization_constants":
                                 [{"id": 0, "value": 1}]}}, "resources[4].shader.specialization_constants",
     "not supported"),
    ("commands[0].dispatch_graph.bindings[2].resource_ref", "m", "commands[0].dispatch_graph.bindings[2]",
     "names no tensor or buffer"),
    ("commands[0].dispatch_graph.bindings[2].id", 1, "commands[0].dispatch_graph.bindings[2]", "bound twice"),
    ("commands[0].dispatch_graph.bindings[2].id", 7, "commands[0].dispatch_graph.bindings[2]",
     "binding id 7 is none of the VGF's input and output bindings"),
    ("commands[0].dispatch_graph.bindings[2]", KeyError, "commands[0].dispatch_graph.bindings",
     "binds nothing to the VGF's output 0"),
    ("resources[1].tensor.src", "flat.npy", "resources[1].tensor.src", "an array of shape [128]"),
    ("resources[1].tensor.src", "int8.npy", "resources[1].tensor.src", "128 bytes of data, 'a' takes 512"),
    ("commands[0].dispatch_graph.bindings[1]", KeyError, "commands[0].dispatch_graph.bindings",
     "binds nothing to the VGF's input 1"),
    ("commands[0].dispatch_graph.implicit_barrier", "yes", "commands[0].dispatch_graph.implicit_barrier",
     "true or false"),
    ("commands[1].dispatch_barrier.memory_barrier_refs", ["a"], "commands[1].dispatch_barrier.memory_barrier_refs[0]",
     "names no memory_barrier"),
    ("resources[3].tensor.dims", [1, 4, 4, 9], "commands[0].dispatch_graph.bindings[2]", "R32_SFLOAT[1x4x4x8]"),
    ("resources[0].graph.src", "missing.vgf", "resources[0].graph.src", "does not exist"),
    ("resources[1].tensor.src", "missing.npy", "resources[1].tensor.src", "does not exist"),
    ("resources[1].tensor.memory_group", {"id": "g1", "offset": 3}, "resources[1].tensor", "not a multiple of"),
    ("resources[5]", {"buffer": {"uid": "huge", "size": 2**32 - 1, "shader_access": "readonly",
                                 "memory_group": {"id": "h", "offset": 2**62}}}, "resources[5].buffer",
     "more than pyvgf's memory budget"),
])
def test_errors_name_the_json_path(tmp_path: Path, path: str, value, where: str, message: str) -> None:
    doc = _edit(_base(tmp_path), path, value)
    with pytest.raises(ScenarioError) as info:
        scenario.run(scenario.parse(doc, tmp_path), "cpu")
    assert info.value.path == where
    assert message in str(info.value)


def test_push_constants_on_cpu_are_refused_with_their_path(tmp_path: Path) -> None:
    vgf = fixtures.model("runtime_segments")
    np.save(tmp_path / "pc.npy", np.arange(4, dtype=np.uint32))
    doc = json.loads(json.dumps(scenario.template(read(vgf), str(vgf))))
    doc["resources"].append({"raw_data": {"uid": "pc", "src": "pc.npy"}})
    (sub,) = doc["commands"][0]["dispatch_graph"]["shader_substitutions"]
    doc["commands"][0]["dispatch_graph"]["shader_substitutions"] = []
    doc["commands"][0]["dispatch_graph"]["push_constants"] = [{"push_data_ref": "pc", "shader_target": sub["target"]}]
    for entry in doc["resources"]:
        body = next(iter(entry.values()))
        if "dims" in body and "src" in body:
            np.save(tmp_path / "in.npy", np.zeros(body["dims"], np.float32))
            body["src"] = "in.npy"

    with pytest.raises(ScenarioError, match="push") as info:
        scenario.run(scenario.parse(doc, tmp_path), "cpu", shaders=SHADERS)
    assert info.value.path.startswith("commands[0].dispatch_graph")


def test_bad_json_file_and_nothing_modified(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{"resources": [')
    with pytest.raises(ScenarioError, match="not valid JSON") as info:
        scenario.load(path)
    assert info.value.path == str(path)
    assert path.read_text() == '{"resources": ['


# -- fuzzing: whatever the file holds, a ScenarioError or a run ------------------------------

_JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                 max_size=3), max_leaves=8)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def _get(doc, path):
    for key in path:
        doc = doc[key]
    return doc


@st.composite
def _mutated(draw, base: dict) -> dict:
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "delete", "add", "retype", "retype"]))
        old = parent[path[-1]]
        if action == "retype":
            # a value of the same type: the document stays well-formed more often, so the run is fuzzed too
            strings = [v for p in _paths(doc) if isinstance(v := _get(doc, p), str)]
            if isinstance(old, bool):
                parent[path[-1]] = not old
            elif isinstance(old, int):
                parent[path[-1]] = draw(st.sampled_from([0, 1, 2, 3, 4, 8, 16, 512, old + 1, old * 2]))
            elif isinstance(old, str):
                parent[path[-1]] = draw(st.sampled_from(strings))
            elif isinstance(old, list) and old:
                copied = list(old)
                draw(st.randoms()).shuffle(copied)
                parent[path[-1]] = copied + draw(st.sampled_from([[], copied[:1]]))
        elif action == "delete":
            del parent[path[-1]]
        elif action == "replace":
            parent[path[-1]] = draw(_JSON | st.sampled_from(["a", "g", "m", "c", -1, 0, 2**32, [], {}]))
        elif isinstance(parent[path[-1]], dict):
            parent[path[-1]][draw(st.text(max_size=6))] = draw(_JSON)
        elif isinstance(parent[path[-1]], list):
            parent[path[-1]].append(draw(_JSON))
    return doc


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_scenarios_give_clear_errors(tmp_path: Path, data) -> None:
    """Mutated documents: a ScenarioError naming a JSON path, or a run whose errors are pyvgf's."""
    doc = data.draw(_mutated(_base(tmp_path)))
    try:
        plan = scenario.parse(doc, tmp_path, tmp_path / "out")
    except ScenarioError as exc:
        assert exc.path and str(exc).startswith(exc.path + ": ")
        event("refused by the parser")
        return
    (tmp_path / "out").mkdir(exist_ok=True)
    try:
        scenario.run(plan, "cpu", dry_run=data.draw(st.booleans()))
        event("ran")
    except VGFError as exc:
        assert str(exc)
        event(f"refused by the run: {type(exc).__name__}")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_scenario_bytes_give_clear_errors(tmp_path: Path, data) -> None:
    """Mutated bytes of the JSON text (absolute paths: the files exist) through fuzz_target, the
    entry point of pyvgf.testing.fuzz's worker processes."""
    doc = _base(tmp_path)
    for entry in doc["resources"]:
        body = next(iter(entry.values()))
        if "src" in body:
            body["src"] = str(tmp_path / body["src"])
    text = bytearray(json.dumps(doc).encode())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(text) - 1))
        action = data.draw(st.sampled_from(["flip", "delete", "insert"]))
        if action == "flip":
            text[at] = data.draw(st.sampled_from(b'{}[]",:0123456789-e.atn\\ x\x00\xff'))
        elif action == "delete":
            del text[at:at + data.draw(st.integers(1, 8))]
        else:
            text[at:at] = data.draw(st.sampled_from([b"[", b"{", b'"', b"1e999", b"-1", b'"a":1,', b"null"]))
    try:
        scenario.fuzz_target(bytes(text))
        event("ran")
    except VGFError as exc:
        assert str(exc)
        event("not JSON" if "not valid JSON" in str(exc) else "refused after decoding")


# -- the command lines --------------------------------------------------------------------------


def _cli(*args: str, module: str = "pyvgf") -> subprocess.CompletedProcess:
    code = ("import sys; from pyvgf.cli import scenario_runner_main as m; sys.exit(m(sys.argv[1:]))"
            if module == "runner" else "import sys; from pyvgf.cli import main; sys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, *args], check=False, capture_output=True, text=True, cwd=ROOT)


def test_scenario_runner_flags(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(json.dumps(_base(tmp_path)))
    assert scenario_runner_main(["--scenario", str(tmp_path / "s.json"), "--output", str(tmp_path / "dry"),
                                 "--dry-run"]) == 0
    assert list((tmp_path / "dry").iterdir()) == []
    profile = tmp_path / "profile.json"
    run = _cli("--scenario", str(tmp_path / "s.json"), "--output", str(tmp_path / "out"), "--repeat", "3",
               "--profiling-dump-path", str(profile), module="runner")
    assert run.returncode == 0, run.stderr
    assert np.load(tmp_path / "out" / "c.npy").sum() == 2 * 128
    doc = json.loads(profile.read_text())
    runs = [e for e in doc["traceEvents"] if e.get("cat") == "run"]
    assert [e["args"]["run"] for e in runs] == [0, 1, 2] and all(e["dur"] >= 0 for e in runs)
    assert doc["otherData"]["backend"] == "cpu" and "setup" in doc["otherData"]["note"]
    assert main(["scenario", "--scenario", str(tmp_path / "s.json"), "--output", str(tmp_path / "o2")]) == 0
    assert (tmp_path / "o2" / "c.npy").is_file()


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    doc = _edit(_base(tmp_path), "commands[1]", {"dispatch_fragment": {}})
    (tmp_path / "s.json").write_text(json.dumps(doc))
    for proc in (_cli("scenario", str(tmp_path / "s.json")), _cli("--scenario", str(tmp_path / "s.json"),
                                                                  module="runner")):
        assert proc.returncode == 1
        assert "Traceback" not in proc.stderr
        assert "commands[1].dispatch_fragment: fragment pipelines are not supported" in proc.stderr
    bad = _cli("--scenario", str(tmp_path / "s.json"), "--repeat", "0", module="runner")
    assert bad.returncode == 1 and "repeat" in bad.stderr and "Traceback" not in bad.stderr


def test_one_graph_two_substitutions_on_cpu(tmp_path: Path) -> None:
    """Two dispatches of one VGF (graph -> compute -> graph): the first substitutes its compute
    module with shader "triple", the second runs the module's own stand-in; each is as pyvgf.load
    runs the model with that stand-in."""
    def triple(resources, workgroups) -> None:
        src, dst = resources[(0, 0)].view(np.float32), resources[(0, 1)].view(np.float32)
        dst[: workgroups[0]] = 3 * src[: workgroups[0]]

    vgf = fixtures.model("runtime_segments")
    doc = scenario.template(read(vgf), str(vgf))
    (module,) = [m.name for m in read(vgf).modules if m.type.name == "COMPUTE"]
    (tmp_path / "triple.spv").write_bytes(doubling_shader().astype("<u4").tobytes())  # code the cpu never runs
    doc["resources"] = [r for r in doc["resources"] if "shader" not in r]
    doc["resources"].append({"shader": {"uid": "triple", "src": "triple.spv", "type": "SPIR-V"}})
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((4, 8)).astype(np.float32) for _ in range(2)]
    for k, x in enumerate(inputs):
        np.save(tmp_path / f"in{k}.npy", x)
        doc["resources"][1 + k]["tensor"]["src"] = f"in{k}.npy"
    first = doc["commands"][0]["dispatch_graph"]
    first["shader_substitutions"] = [{"shader_ref": "triple", "target": module}]
    second = copy.deepcopy(first)
    second["shader_substitutions"] = []
    doc["resources"].append({"tensor": {"uid": "out2", "dst": "out2.npy", "dims": [4, 8],
                                        "format": "VK_FORMAT_R32_SFLOAT", "shader_access": "writeonly"}})
    second["bindings"][-1]["resource_ref"] = "out2"
    doc["commands"].append({"dispatch_graph": second})
    scenario.run(scenario.parse(doc, tmp_path), "cpu", shaders={"triple": triple, module: double})
    for name, fn in (("TEMPLATE_PATH_TENSOR_OUTPUT_0", triple), ("out2.npy", double)):
        with pyvgf.load(vgf, shaders={module: fn}) as model:
            (want,) = model.run(inputs)
        np.testing.assert_array_equal(np.load(tmp_path / name), want)
