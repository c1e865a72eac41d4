"""Cross-reference checks over a whole VGF (what Arm's decoder leaves to its tools)."""

from __future__ import annotations

from ..errors import VGFFormatError
from .model import NO_INDEX, VGF, BindingSlot, Category, CodeType, DescriptorType

SEQUENCE = "model sequence table"


def _fail(message: str, section: str) -> None:
    raise VGFFormatError(message, section=section)


def _index(value: int, count: int, what: str, target: str, section: str) -> None:
    if not 0 <= value < count:
        _fail(f"{what} refers to {target} {value}, but there are {count}", section)


def _slots(slots: list[BindingSlot], n_resources: int, what: str) -> None:
    for i, slot in enumerate(slots):
        _index(slot.mrt_index, n_resources, f"{what} binding slot {i}", "resource", SEQUENCE)


def validate(vgf: VGF) -> None:
    """Raise VGFFormatError naming the first broken reference or inconsistency in `vgf`."""
    n_mod, n_res, n_const = len(vgf.modules), len(vgf.resources), len(vgf.constants)
    for i, m in enumerate(vgf.modules):
        if m.code is not None and m.code_type == CodeType.NONE:
            _fail(f"module {i} ({m.name!r}) has code but code type NONE", "module table")
    for i, r in enumerate(vgf.resources):
        is_constant = r.category == Category.CONSTANT
        if is_constant != (r.descriptor_type == DescriptorType.NONE):
            _fail(
                f"resource {i} of category {Category(r.category).name} has descriptor type {r.descriptor_type}"
                " (constants, and only constants, have none: 0xFFFFFFFF)",
                "model resource table",
            )
    for i, c in enumerate(vgf.constants):
        _index(c.mrt_index, n_res, f"constant {i}", "resource", "constants")
        if vgf.resources[c.mrt_index].category != Category.CONSTANT:
            _fail(f"constant {i} refers to resource {c.mrt_index}, which is not a CONSTANT", "constants")
    seq = vgf.sequence
    _slots(seq.inputs, n_res, "model input")
    _slots(seq.outputs, n_res, "model output")
    for i, s in enumerate(seq.segments):
        what = f"segment {i}"
        _index(s.module_index, n_mod, what, "module", SEQUENCE)
        if vgf.modules[s.module_index].type != s.type:
            _fail(f"{what} is {s.type.name} but its module {s.module_index} is not", SEQUENCE)
        if s.dispatch_shape is not None and len(s.dispatch_shape) != 3:
            _fail(f"{what} dispatch_shape has {len(s.dispatch_shape)} entries, not 3", SEQUENCE)
        _slots(s.inputs, n_res, f"{what} input")
        _slots(s.outputs, n_res, f"{what} output")
        sets: set[int] = set()
        for position, info in enumerate(s.set_infos):
            set_index = position if info.set_index == NO_INDEX else info.set_index
            if set_index in sets:
                _fail(f"{what} has descriptor set {set_index} twice", SEQUENCE)
            sets.add(set_index)
            _slots(info.bindings, n_res, f"{what} descriptor set {set_index}")
            bindings = [b.binding for b in info.bindings]
            if len(set(bindings)) != len(bindings):
                _fail(f"{what} descriptor set {set_index} uses a binding number twice: {bindings}", SEQUENCE)
        for index in s.constants:
            _index(index, n_const, f"{what} constants list", "constant", SEQUENCE)
        for b in s.constant_bindings or []:
            what_binding = f"{what} constant binding {b.graph_constant_id}"
            _index(b.constant_table_index, n_const, what_binding, "constant", SEQUENCE)
        ids = [b.graph_constant_id for b in s.constant_bindings or []]
        if len(set(ids)) != len(ids):
            _fail(f"{what} binds a graph constant id twice: {ids}", SEQUENCE)
