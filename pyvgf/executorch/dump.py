"""Describe an ExecuTorch program for `pyvgf inspect model.pte`, and extract its VGF delegates."""

from __future__ import annotations

import re
from pathlib import Path

from .program import (
    VGF_BACKEND,
    DelegateCall,
    FreeCall,
    JumpFalseCall,
    KernelCall,
    Method,
    MoveCall,
    Program,
)


def _value(m: Method, k: int) -> str:
    value = m.values[k]
    if isinstance(value, float):
        return f"{value:.9g}"
    return f"%{k}:{value}" if hasattr(value, "sizes") else repr(value)


def _instruction(m: Method, n: int, ins) -> str:
    if isinstance(ins, KernelCall):
        args = ", ".join(_value(m, a) for a in ins.args)
        return f"{n:4d}  kernel   {m.operators[ins.op_index].qualified}({args})"
    if isinstance(ins, DelegateCall):
        d = m.delegates[ins.delegate_index]
        args = ", ".join(f"%{a}" for a in ins.args)
        return f"{n:4d}  delegate {ins.delegate_index} ({d.backend_id})({args})"
    if isinstance(ins, MoveCall):
        return f"{n:4d}  move     %{ins.move_from} -> %{ins.move_to}"
    if isinstance(ins, JumpFalseCall):
        return f"{n:4d}  jump     to {ins.destination_instruction} if not %{ins.cond_value_index}"
    assert isinstance(ins, FreeCall)
    return f"{n:4d}  free     %{ins.value_index}"


def summary(program: Program) -> str:
    """Methods with their inputs and outputs, instructions in order, delegates, kernels."""
    segments = ", ".join(f"{size} B at {offset}" for offset, size in program.segments) or "none"
    lines = [
        f"ExecuTorch program, schema version {program.version}, {program.size} bytes"
        + (", extended header" if program.extended_header else ""),
        f"data segments: {segments}",
    ]
    for m in program.methods:
        lines.append(f"method {m.name!r}: {len(m.values)} values, {len(m.instructions)} instructions")
        lines += [f"  input  %{k}: {m.values[k]}" for k in m.inputs]
        lines += [f"  output %{k}: {m.values[k]}" for k in m.outputs]
        if m.constants:
            lines.append(f"  constants: {len(m.constants)} tensors")
        for k, d in enumerate(m.delegates):
            specs = ", ".join(f"{key}={value.decode('utf-8', 'replace')}" for key, value in d.compile_specs.items()
                              if key != "debug_artifact_path")
            lines.append(f"  delegate {k}: {d.backend_id}, {d.data.size} bytes ({d.location} {d.index})"
                         + (f"; {specs}" if specs else ""))
        kernels = sorted({m.operators[i.op_index].qualified for i in m.instructions if isinstance(i, KernelCall)})
        lines.append(f"  kernels: {', '.join(kernels) if kernels else 'none'}")
        lines.append("  instructions:")
        lines += ["  " + _instruction(m, n, ins) for n, ins in enumerate(m.instructions)]
    return "\n".join(lines)


def extract(program: Program, folder: str | Path) -> list[Path]:
    """Write every VGF delegate to FOLDER/<method>_delegate_<k>.vgf; returns the paths."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for m in program.methods:
        for k, d in enumerate(m.delegates):
            if d.backend_id == VGF_BACKEND:
                stem = re.sub(r"[^\w.-]", "_", m.name)
                path = out / f"{stem}_delegate_{k}.vgf"
                path.write_bytes(d.data.tobytes())
                written.append(path)
    return written
