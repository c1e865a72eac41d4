"""pyvgf.debug and `pyvgf run --dump-intermediates/--profile/--trace`: every operator's value,
keyed to the model; per-step times as a table and as a Chrome trace."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time

import ml_dtypes
import numpy as np
import pytest

import fixtures  # tools/fixtures.py
import pyvgf
from pyvgf import HalError, VGFError, debug
from pyvgf.build import Graph
from pyvgf.cli import main
from pyvgf.debug.watch import WATCHER
from support.vulkan import require_vulkan


def _plan(model):
    (segment,) = model._schedule.segments
    return segment.pipeline.plan


def _int8_input(model, seed=0):
    info = model.inputs[0]
    return np.random.default_rng(seed).integers(-128, 128, info.shape).astype(np.int8)


@pytest.mark.fast
def test_capture_keeps_the_values_fusion_never_makes():
    """interpreter_fuse_f32 (model-converter) runs as fused steps; a capture still has each
    convolution's result before its CLAMP, and equals running that convolution alone."""
    with pyvgf.load(fixtures.model("interpreter_fuse_f32")) as model:
        plan = _plan(model)
        assert plan.fused  # the plain run has no convolution result to show
        x = np.random.default_rng(1).standard_normal(model.inputs[0].shape).astype(np.float32)
        want = model.run([x])
        cap = debug.capture(model, [x])
    nodes = plan.graph.nodes
    assert [(v.op_index, v.op, v.id) for v in cap.values] == [(i, n.op, n.id) for i, n in enumerate(nodes)]
    for got, w in zip(cap.outputs, want):
        np.testing.assert_array_equal(got, w)
    conv = cap.values[0]
    assert (conv.op, nodes[1].op) == ("CONV2D", "CLAMP")
    np.testing.assert_array_equal(np.clip(conv.value, 0, 6), cap.values[1].value)
    assert conv.value.min() < 0 or conv.value.max() > 6  # the clamp did something: not the same value
    for value, node in zip(cap.values, nodes):
        assert (value.value.dtype, value.value.shape) == (node.result_type.dtype, node.result_type.shape)
    assert WATCHER.get() is None


def test_capture_of_a_real_int8_model_ends_in_its_output(real_model):
    with pyvgf.load(real_model) as model:
        x = _int8_input(model)
        want = model.run([x])[0]
        cap = debug.capture(model, [x])
        again = model.run([x])[0]  # and the next plain run is the fused one, as before
        plan = _plan(model)
    assert len(cap.values) == len(plan.graph.nodes)
    np.testing.assert_array_equal(cap.outputs[0], want)
    np.testing.assert_array_equal(again, want)
    last = cap.find(0, plan.graph.results[0].id)
    np.testing.assert_array_equal(last.value, want)
    np.testing.assert_array_equal(cap.inputs[0][0], x)


def test_values_carry_the_opname_of_the_module():
    g = Graph()
    a = g.input("float32", (1, 4))
    twice = g.op("ADD", input1=a, input2=a, debug_name="twice")
    g.output(g.op("MUL", input1=twice, input2=a, shift=np.zeros(1, np.int8)))
    with pyvgf.load(g.to_bytes()) as model:
        cap = debug.capture(model, [np.arange(4, dtype=np.float32).reshape(1, 4)])
    assert [v.name for v in cap.values] == ["twice", None]
    assert str(cap.values[0]).startswith('segment 0 op 0 ADD %') and '"twice"' in str(cap.values[0])


def test_dump_writes_one_npy_per_value_and_an_index(tmp_path):
    g = Graph()
    a = g.input(ml_dtypes.bfloat16, (2, 3))
    g.output(g.op("ABS", input1=g.op("NEGATE", input1=a, input1_zp=np.zeros(1, ml_dtypes.bfloat16),
                                     output_zp=np.zeros(1, ml_dtypes.bfloat16))))
    x = np.array([[1.5, -2, 3], [0, -0.25, 8]], ml_dtypes.bfloat16)
    with pyvgf.load(g.to_bytes()) as model:
        index = debug.capture(model, [x]).dump(tmp_path / "values")
    entries = json.loads(index.read_text())["values"]
    assert [e["op"] for e in entries] == ["NEGATE", "ABS"]
    assert {p.name for p in (tmp_path / "values").iterdir()} == {"index.json", *(e["file"] for e in entries)}
    for entry, want in zip(entries, (-x.astype(np.float32), np.abs(x.astype(np.float32)))):
        assert (entry["dtype"], entry["shape"], entry["stored_as"]) == ("bfloat16", [2, 3], "uint16")
        got = np.load(tmp_path / "values" / entry["file"]).view(ml_dtypes.bfloat16)
        np.testing.assert_array_equal(got.astype(np.float32), want)


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_profile_times_every_step_of_each_run(backend):
    with pyvgf.load(fixtures.model("interpreter_fuse_i8"), backend=backend) as model:
        plan = _plan(model)
        x = _int8_input(model)
        prof = debug.profile(model, [x], runs=3)
    steps = len(plan.schedule) - sum(len(chain) - 1 for chain in plan.fused)
    ops = [e for e in prof.events if e.kind == "op"]
    assert len(ops) == 3 * steps and prof.runs == 3
    assert len([e for e in prof.events if e.kind == "run"]) == 3
    for run in range(3):
        (segment,) = [e for e in prof.events if e.kind == "segment" and e.run == run]
        inside = [e for e in ops if e.run == run]
        assert all(segment.start <= e.start <= e.end <= segment.end for e in inside)
    chains = {" + ".join(n.op for n in chain) for chain in plan.fused}
    assert chains <= {e.label for e in ops}
    table = prof.table()
    rows = [line for line in table.splitlines()[2:] if "%" in line]
    shares = [float(line.split("%")[0].split()[-1]) for line in rows]
    assert sum(shares) == pytest.approx(100, abs=0.1 * len(shares))
    assert shares[:-1] == sorted(shares[:-1], reverse=True)  # slowest first, then the rest
    for chain in chains:
        assert chain in table


def _check_trace(trace: dict) -> list[dict]:
    """The shape the Chrome trace event format gives a JSON object trace; the complete events."""
    assert isinstance(trace["traceEvents"], list) and trace["displayTimeUnit"] in ("ms", "ns")
    complete = []
    for e in trace["traceEvents"]:
        assert isinstance(e["name"], str) and e["ph"] in ("X", "M")
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name") and isinstance(e["args"]["name"], str)
            continue
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float))
        assert e["ts"] >= 0 and e["dur"] >= 0 and isinstance(e["args"], dict)
        complete.append(e)
    return complete


@pytest.mark.fast  # the profile names a fused step
def test_run_cli_dumps_profiles_and_traces(tmp_path, capsys):
    model = str(fixtures.model("interpreter_fuse_i8"))
    trace = tmp_path / "run.json"
    assert main(["run", model, "--random-inputs", "--dump-intermediates", str(tmp_path / "values"),
                 "--profile", "--trace", str(trace), "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert "intermediates: 7 values ->" in out
    assert "profile of 2 run(s) on cpu" in out and "CONV2D + RESCALE" in out
    assert len(json.loads((tmp_path / "values" / "index.json").read_text())["values"]) == 7
    events = _check_trace(json.loads(trace.read_text()))
    runs = [e for e in events if e["cat"] == "run"]
    assert len(runs) == 2
    for e in (e for e in events if e["cat"] == "op"):
        run = runs[e["args"]["run"]]
        assert run["ts"] <= e["ts"] and e["ts"] + e["dur"] <= run["ts"] + run["dur"] + 1e-3
        assert {"op_index", "id", "shape", "segment"} <= set(e["args"])


def test_run_cli_rejects_a_repeat_of_zero(capsys):
    with pytest.raises(SystemExit):
        main(["run", str(fixtures.model("add_f32")), "--random-inputs", "--profile", "--repeat", "0"])
    assert "not a positive count" in capsys.readouterr().err


def test_the_cli_runs_as_a_module(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pyvgf", "run", str(fixtures.model("add_f32")),
                           "--random-inputs", "--profile"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "ADD" in proc.stdout and "(interpreter, transfers)" in proc.stdout


def test_cpu_timestamps_bracket_each_segment_of_an_execution():
    with pyvgf.load(fixtures.model("interpreter_fuse_i8")) as model:
        pool = model.device.create_query_pool(2)
        run = model._schedule.execution(timestamps=pool).prepared.run
        assert pool.results() == [None, None]
        before = time.perf_counter()
        run(model._check([_int8_input(model)]))
        after = time.perf_counter()
        first, last = pool.results()
        assert before <= first <= last <= after
        encoder = model.device.create_command_encoder()
        with pytest.raises(HalError, match="query 2 out of range"):
            encoder.write_timestamp(pool, 2)


def test_vulkan_profile_times_each_segment_on_the_gpu(capsys):
    require_vulkan()
    model_path = fixtures.model("runtime_segments")  # graph, compute shader, graph
    with pyvgf.load(model_path, backend="vulkan") as model:
        xs = [np.random.default_rng(0).standard_normal(i.shape).astype(np.float32) for i in model.inputs]
        with pytest.raises(VGFError, match="needs a model on the cpu executor"):
            debug.capture(model, xs)
        prof = debug.profile(model, xs, runs=2)
        has_timestamps = model.device.timestamp_period is not None
    if not has_timestamps:
        assert "timestampValidBits 0" in prof.note
        return
    assert not prof.note
    segments = [e for e in prof.events if e.kind == "segment"]
    assert [(e.run, e.segment) for e in segments] == [(r, n) for r in range(2) for n in range(3)]
    for a, b in itertools.pairwise(segments):
        assert a.start <= a.end and (a.run != b.run or a.end <= b.start)
    rows = [line.split()[1] for line in prof.table().splitlines()[2:] if line.startswith("  segment ")]
    assert rows == sorted("012", key=lambda n: -sum(e.seconds for e in segments if e.segment == int(n)))
    events = _check_trace(prof.trace())
    assert {e["tid"] for e in events if e["cat"] == "segment"} == {2}
    assert main(["run", str(model_path), "--backend", "vulkan", "--random-inputs", "--profile"]) == 0
    assert "segment 1 compute_segment_0" in capsys.readouterr().out


def test_values_carry_the_opline_of_the_module():
    """A module with OpString/OpLine (as compilers that keep source locations write them)."""
    from pyvgf.format import read
    from pyvgf.spirv import tables
    from support.spirv import find, inst, spirv_words, splice, string_words

    opcode = {name: code for code, (name, _) in tables.INSTRUCTIONS.items()}
    path = fixtures.model("interpreter_fuse_i8")
    words = spirv_words(path).copy()
    file_id = int(words[3])
    words[3] += 1  # the id bound
    at, _ = find(words, opcode["OpExtInst"], 1)  # the second node
    words = splice(words, at, 0, inst(opcode["OpLine"], file_id, 42, 7))
    at, _ = find(words, opcode["OpName"])
    words = splice(words, at, 0, inst(opcode["OpString"], file_id, *string_words("net.py")))
    vgf = read(path)
    vgf.modules[0].code = words
    with pyvgf.load(vgf) as model:
        cap = debug.capture(model, [_int8_input(model)])
    assert [v.location for v in cap.values] == [None] + ["net.py:42:7"] * (len(cap.values) - 1)
    assert " at net.py:42:7: " in str(cap.values[1])


def test_a_run_without_a_watcher_takes_no_observed_path(monkeypatch):
    from pyvgf.tosa import interpreter

    def observed(*args):
        raise AssertionError("a plain run called the observer path")

    with pyvgf.load(fixtures.model("interpreter_fuse_i8")) as model:
        x = _int8_input(model)
        want = model.run([x])
        monkeypatch.setattr(interpreter.GraphPlan, "_observed", observed)
        np.testing.assert_array_equal(model.run([x])[0], want[0])
        with pytest.raises(AssertionError, match="the observer path"):  # the patch is in effect
            debug.profile(model, [x])


def test_both_cpu_executors_capture_the_same_values():
    path = fixtures.model("interpreter_fuse_i8")
    captures = []
    for backend in ("reference", "cpu"):
        with pyvgf.load(path, backend=backend) as model:
            captures.append(debug.capture(model, [_int8_input(model)]))
    reference, fast = captures
    assert [(v.op_index, v.op, v.id) for v in fast.values] == [(v.op_index, v.op, v.id) for v in reference.values]
    for a, b in zip(reference.values, fast.values):
        np.testing.assert_array_equal(a.value, b.value)  # integers: bit-exact


def test_vulkan_profile_says_when_the_queue_has_no_timestamps(monkeypatch):
    require_vulkan()
    with pyvgf.load(fixtures.model("add_f32"), backend="vulkan") as model:
        monkeypatch.setattr(type(model.device), "timestamp_period", property(lambda self: None))
        with pytest.raises(HalError, match="timestampValidBits is 0"):
            model.device.create_query_pool(2)
        x = [np.ones(i.shape, np.float32) for i in model.inputs]
        prof = debug.profile(model, x, runs=2)
    assert "no timestamps (timestampValidBits 0), so no per-segment times" in prof.note
    assert [e.kind for e in prof.events] == ["run", "run"]
    assert prof.table().endswith(prof.note)
