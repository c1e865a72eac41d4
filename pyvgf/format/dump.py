"""Describe a VGF: the JSON `vgf_dump -i` prints (key for key), and a readable summary."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import vknames
from .model import NO_INDEX, VGF, BindingSlot, Category, CodeType, ModuleType, numpy_dtype

_SHADER_TYPE = {CodeType.NONE: "None", CodeType.SPIRV: "SPIR-V", CodeType.GLSL: "GLSL", CodeType.HLSL: "HLSL"}
_INT32_MAX = 0x7FFFFFFF


def _name(table: dict[int, str], value: int) -> str:
    return table.get(value) or f"Unknown({value})"


def _sampler_name(table: dict[int, str], value: int) -> str:
    return f"Unknown({value})" if value > _INT32_MAX else _name(table, value)


def format_name(vk_format: int) -> str:
    """`VK_FORMAT_...` for a VkFormat value, `Unknown(n)` when the registry has none."""
    return _name(vknames.FORMAT, vk_format)


def descriptor_type_name(descriptor_type: int) -> str:
    """`VK_DESCRIPTOR_TYPE_...`, or `none` for constants (0xFFFFFFFF)."""
    return "none" if descriptor_type == NO_INDEX else _name(vknames.DESCRIPTOR_TYPE, descriptor_type)


def _slots(slots: list[BindingSlot]) -> list[dict[str, int]]:
    return [{"index": i, "binding": s.binding, "mrt_index": s.mrt_index} for i, s in enumerate(slots)]


def _named(slots: list[BindingSlot], names: list[str]) -> list[dict[str, Any]]:
    return [
        {"index": i, "name": names[i] if i < len(names) else "", "binding": s.binding, "mrt_index": s.mrt_index}
        for i, s in enumerate(slots)
    ]


def to_json(vgf: VGF) -> dict[str, Any]:
    """The document `vgf_dump -i FILE` prints, as Python values."""
    major, minor, patch = vgf.header.version
    modules = [
        {
            "index": i,
            "type": ModuleType(m.type).name,
            "name": m.name,
            "entry_point": m.entry_point,
            "shader_type": _SHADER_TYPE[CodeType(m.code_type)],
            "shader_code_available": m.code is not None and len(m.code) > 0,
        }
        for i, m in enumerate(vgf.modules)
    ]
    resources = []
    for i, r in enumerate(vgf.resources):
        entry: dict[str, Any] = {
            "index": i,
            "category": Category(r.category).name,
            "vk_descriptor_type": descriptor_type_name(r.descriptor_type),
            "vk_format": format_name(r.format),
            "shape": list(r.shape),
            "stride": list(r.strides),
        }
        if r.sampler is not None:
            entry["sampler_config"] = {
                "min_filter": _sampler_name(vknames.FILTER, r.sampler.min_filter),
                "mag_filter": _sampler_name(vknames.FILTER, r.sampler.mag_filter),
                "address_mode_u": _sampler_name(vknames.SAMPLER_ADDRESS_MODE, r.sampler.address_mode_u),
                "address_mode_v": _sampler_name(vknames.SAMPLER_ADDRESS_MODE, r.sampler.address_mode_v),
                "border_color": _sampler_name(vknames.BORDER_COLOR, r.sampler.border_color),
            }
        if r.alias_group_id != NO_INDEX:
            entry["alias_group_id"] = r.alias_group_id
        resources.append(entry)
    segments = [
        {
            "index": i,
            "type": ModuleType(s.type).name,
            "module_index": s.module_index,
            "name": s.name,
            "inputs": _slots(s.inputs),
            "outputs": _slots(s.outputs),
            "descriptor_set_infos": [
                {"bindings": _slots(d.bindings), "set_index": j if d.set_index == NO_INDEX else d.set_index}
                for j, d in enumerate(s.set_infos)
            ],
            "push_constant_ranges": [
                {"index": j, "stage_flags": p.stage_flags, "offset": p.offset, "size": p.size}
                for j, p in enumerate(s.push_constant_ranges)
            ],
            "constants": list(s.constants),
            "dispatch_shape": list(s.dispatch_shape or []),
            "constant_bindings": [
                {"graph_constant_id": b.graph_constant_id, "constant_table_index": b.constant_table_index}
                for b in s.graph_constants()
            ],
        }
        for i, s in enumerate(vgf.sequence.segments)
    ]
    seq = vgf.sequence
    return {
        "header": {"major": major, "minor": minor, "patch": patch},
        "modules": modules,
        "resources": resources,
        "model_sequence": {
            "segments": segments,
            "inputs": _named(seq.inputs, seq.input_names),
            "outputs": _named(seq.outputs, seq.output_names),
        },
        "constants": [
            {"index": i, "mrt_index": c.mrt_index, "sparsity_dimension": c.sparsity_dimension}
            for i, c in enumerate(vgf.constants)
        ],
    }


def _shape(shape: list[int]) -> str:
    return "x".join("?" if d < 0 else str(d) for d in shape) or "scalar"


def _dtype(vk_format: int) -> str:
    try:
        return str(numpy_dtype(vk_format))
    except ValueError:
        return format_name(vk_format)


def _slot_text(slots: list[BindingSlot]) -> str:
    return ", ".join(f"b{x.binding}->r{x.mrt_index}" for x in slots)


def _io_text(slots: list[BindingSlot], names: list[str]) -> str:
    return ", ".join(f"{names[k] if k < len(names) else '?'}=r{x.mrt_index}" for k, x in enumerate(slots))


def _resource_text(vgf: VGF, mrt: int | None) -> str:
    if mrt is None:
        return "unused by the model"
    return f"{_dtype(vgf.resources[mrt].format):8} {_shape(vgf.resources[mrt].shape)}"


def overview(
    vgf: VGF,
    inputs: list[tuple[str, int | None]],
    outputs: list[tuple[str, int]],
    ops: Mapping[int, Mapping[str, int] | str],
) -> str:
    """What a person wants first: the model inputs and outputs (name, dtype, shape), the
    segments, and how many times each TOSA operator is applied. `inputs` and `outputs` are
    (name, MRT index or None for an unused input); `ops` maps a module index to its operator
    counts, or to why they could not be counted."""

    def io(rows: Sequence[tuple[str, int | None]]) -> list[str]:
        width = max((len(name) for name, _ in rows), default=0)
        return [f"  {name:{width}}  {_resource_text(vgf, m)}" for name, m in rows]

    segments = vgf.sequence.segments
    total: dict[str, int] = {}
    for counts in ops.values():
        for op, n in counts.items() if not isinstance(counts, str) else ():
            total[op] = total.get(op, 0) + n
    lines = [
        f"VGF {'.'.join(map(str, vgf.header.version))}: {len(inputs)} input(s), {len(outputs)} output(s), "
        f"{len(segments)} segment(s), {sum(total.values())} TOSA op(s)",
        "inputs:", *io(inputs), "outputs:", *io(outputs), "segments:",
    ]
    for i, s in enumerate(segments):
        module_ops = ops.get(s.module_index)
        what = f"dispatch {s.dispatch_shape}" if s.type == ModuleType.COMPUTE else (
            module_ops if isinstance(module_ops, str) else f"{sum((module_ops or {}).values())} TOSA op(s)")
        lines.append(f"  [{i}] {ModuleType(s.type).name:7} {s.name}  module {s.module_index}  {what}")
    if total:
        width = max(map(len, total))
        lines.append("TOSA ops:")
        lines += [f"  {op:{width}}  {n}" for op, n in sorted(total.items(), key=lambda item: (-item[1], item[0]))]
    return "\n".join(lines)


def summary(vgf: VGF) -> str:
    """A readable multi-line description: modules, segments, resources, constants."""
    h = vgf.header
    lines = [
        f"VGF {'.'.join(map(str, h.version))}  magic {'legacy' if h.legacy_magic else 'VGF1'}"
        f"  vk_header_version {h.vk_header_version}"
        f"  constants {'legacy FlatBuffers' if vgf.legacy_constants else 'CONST00'}",
        f"modules ({len(vgf.modules)}):",
    ]
    for i, m in enumerate(vgf.modules):
        unit = "words" if m.code_type == CodeType.SPIRV else "chars"
        code = "no code" if m.code is None else f"{len(m.code)} {unit}"
        lines.append(
            f"  [{i}] {ModuleType(m.type).name:7} {m.name} entry {m.entry_point}"
            f"  {_SHADER_TYPE[CodeType(m.code_type)]}, {code}"
        )
    seq = vgf.sequence
    lines.append(f"segments ({len(seq.segments)}):")
    for i, s in enumerate(seq.segments):
        extra = f"  dispatch {s.dispatch_shape}" if s.type == ModuleType.COMPUTE else ""
        lines.append(f"  [{i}] {ModuleType(s.type).name:7} {s.name} module {s.module_index}{extra}")
        lines.append(f"       in [{_slot_text(s.inputs)}]  out [{_slot_text(s.outputs)}]  constants {len(s.constants)}")
    lines.append(
        f"model inputs [{_io_text(seq.inputs, seq.input_names)}]"
        f"  outputs [{_io_text(seq.outputs, seq.output_names)}]"
    )
    lines.append(f"resources ({len(vgf.resources)}):")
    for i, r in enumerate(vgf.resources):
        lines.append(
            f"  [{i}] {Category(r.category).name:12} {_dtype(r.format):8} {_shape(r.shape):16} "
            f"{descriptor_type_name(r.descriptor_type)}"
            + ("" if r.alias_group_id == NO_INDEX else f"  alias group {r.alias_group_id}")
        )
    total = sum(c.data.size for c in vgf.constants)
    lines.append(f"constants ({len(vgf.constants)}, {total} bytes):")
    for i, c in enumerate(vgf.constants):
        r = vgf.resources[c.mrt_index]
        sparse = "" if c.sparsity_dimension < 0 else f"  2:4 sparse on dim {c.sparsity_dimension}"
        lines.append(f"  [{i}] r{c.mrt_index} {_dtype(r.format):8} {_shape(r.shape):16} {c.data.size} bytes{sparse}")
    return "\n".join(lines)
