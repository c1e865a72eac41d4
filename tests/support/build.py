"""Helpers for the pyvgf.build / pyvgf.testing tests.

`vgfpy_encode` writes a built VGF object model with Arm's own encoder (vgfpy), an independent
writer to check pyvgf's object model against; `vgf_dump_json` runs Arm's vgf_dump.
"""

from __future__ import annotations

import io
import json
import subprocess
import tempfile
from pathlib import Path

from fixtures import (
    tool,  # tools/fixtures.py
)
from pyvgf.format.model import VGF, Category


def vgfpy_encode(model: VGF) -> bytes:
    """Encode a single-segment graph model (as pyvgf.build makes them) with vgfpy."""
    import vgfpy

    enc = vgfpy.CreateEncoder(model.header.vk_header_version)
    modules = [
        enc.AddModule(vgfpy.ModuleType(int(m.type)), m.name, m.entry_point, [int(w) for w in m.code])
        for m in model.modules
    ]
    refs = []
    for res in model.resources:
        if res.category is Category.INPUT:
            refs.append(enc.AddInputResource(res.descriptor_type, res.format, res.shape, res.strides))
        elif res.category is Category.OUTPUT:
            refs.append(enc.AddOutputResource(res.descriptor_type, res.format, res.shape, res.strides))
        else:
            refs.append(enc.AddConstantResource(res.format, res.shape, res.strides))
    consts = [enc.AddConstant(refs[c.mrt_index], c.data.tobytes(), c.sparsity_dimension) for c in model.constants]

    def slots(items):
        return [enc.AddBindingSlot(s.binding, refs[s.mrt_index]) for s in items]

    for seg in model.sequence.segments:
        sets = [enc.AddDescriptorSetInfo(slots(d.bindings), d.set_index) for d in seg.set_infos]
        bindings = [
            vgfpy.GraphConstantBindingRef(b.graph_constant_id, consts[b.constant_table_index])
            for b in seg.graph_constants()
        ]
        enc.AddSegmentInfo(
            modules[seg.module_index], seg.name, sets, slots(seg.inputs), slots(seg.outputs),
            bindings, seg.dispatch_shape or [0, 0, 0],
        )
    seq = model.sequence
    enc.AddModelSequenceInputsOutputs(slots(seq.inputs), seq.input_names, slots(seq.outputs), seq.output_names)
    enc.Finish()
    out = io.BytesIO()
    assert enc.WriteTo(out), "vgfpy failed to write the model"
    return out.getvalue()


def vgf_dump_json(data: bytes | Path) -> dict:
    """vgf_dump's JSON description of a VGF (bytes or a path)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(data) if isinstance(data, Path) else Path(tmp) / "m.vgf"
        if not isinstance(data, Path):
            path.write_bytes(data)
        out = subprocess.run([tool("vgf_dump"), "-i", str(path)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def dump_spirv(data: bytes | Path, module: int = 0) -> bytes:
    """The SPIR-V of module `module`, as vgf_dump extracts it."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(data) if isinstance(data, Path) else Path(tmp) / "m.vgf"
        if not isinstance(data, Path):
            path.write_bytes(data)
        spv = Path(tmp) / "m.spv"
        subprocess.run([tool("vgf_dump"), "-i", str(path), "--dump-spirv", str(module), "-o", str(spv)],
                       capture_output=True, check=True)
        return spv.read_bytes()


def instructions(words) -> list[tuple[int, list[int]]]:
    """(opcode, operand words) of each instruction of a SPIR-V module."""
    words = [int(w) for w in words]
    out, i = [], 5
    while i < len(words):
        count = words[i] >> 16
        assert count > 0, f"zero word count at word {i}"
        out.append((words[i] & 0xFFFF, words[i + 1 : i + count]))
        i += count
    return out


def canonical_graph(data: bytes | Path) -> tuple:
    """A VGF's graph as comparable data: each node's op, result type and operands, with
    constants (inline or from the constant section) as (dtype, shape, bytes), inputs by index
    and results by node position. Two files are the same graph when these are equal."""
    import numpy as np

    from pyvgf.format import read
    from pyvgf.spirv.graph import Const, GraphConstant, Input, decode_graph

    vgf = read(Path(data).read_bytes() if isinstance(data, Path) else data)
    (segment,) = vgf.sequence.segments
    graph = decode_graph(vgf.modules[segment.module_index].code)
    tables = {b.graph_constant_id: vgf.constants[b.constant_table_index] for b in segment.graph_constants()}
    position = {node.id: i for i, node in enumerate(graph.nodes)}

    def operand(o):
        if isinstance(o, tuple):
            return tuple(operand(x) for x in o)
        if isinstance(o, Const):
            value = np.asarray(o.value)
            return ("const", str(value.dtype), value.shape, value.tobytes())
        if isinstance(o, GraphConstant):
            value = np.frombuffer(tables[o.constant_id].data.tobytes(), o.type.dtype).reshape(o.type.shape)
            return ("const", str(value.dtype), value.shape, value.tobytes())
        if isinstance(o, Input):
            return ("input", o.index)
        return ("result", position[o.node], o.element)

    nodes = tuple(
        (n.op, str(n.result_type), tuple(sorted((k, operand(v)) for k, v in n.operands.items())))
        for n in graph.nodes
    )
    io = (tuple(str(i.type) for i in graph.inputs), tuple(str(o.type) for o in graph.outputs))
    return io, nodes, tuple(operand(r) for r in graph.results)
