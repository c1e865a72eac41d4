"""Wrap a built graph's SPIR-V module in the VGF object model, as model-converter does:
one GRAPH module and segment, descriptor set 0, inputs `input_k`, outputs `output_k`, large
constants in the constant section bound by graph constant id (format 0.5)."""

from __future__ import annotations

import numpy as np

from ..elements import BY_TOSA
from ..errors import TosaError
from ..format.model import (
    VGF,
    BindingSlot,
    Category,
    CodeType,
    Constant,
    ConstantBinding,
    DescriptorSetInfo,
    DescriptorType,
    Header,
    ModelSequence,
    Module,
    ModuleType,
    Resource,
    Segment,
)
from .graph import Graph, TensorSpec
from .spirv import emit

SEGMENT_NAME = "graph_segment_0"


def _resource(spec: TensorSpec, category: Category, where: str, unsigned: bool = False) -> Resource:
    if spec.etype.vk_format is None:
        raise TosaError(f"{where}: element type {spec.etype.mlir} has no VkFormat")
    descriptor = DescriptorType.NONE if category is Category.CONSTANT else DescriptorType.TENSOR_ARM
    etype = BY_TOSA[f"U{spec.etype.tosa}"] if unsigned else spec.etype
    return Resource(
        descriptor_type=descriptor,
        format=etype.vk_format,
        category=category,
        shape=list(spec.shape),
    )


def _unsigned_nodes(graph: Graph) -> set[int]:
    """The values RESCALE reads as unsigned (input_unsigned) or writes unsigned
    (output_unsigned): their resources are R8_UINT / R16_UINT, as model-converter writes them."""
    found = set()
    for n, node in enumerate(graph.nodes):
        if node.kind == "op" and node.op == "RESCALE":
            if node.operands.get("input_unsigned"):
                found.add(node.operands["input"].node)
            if node.operands.get("output_unsigned"):
                found.add(n)
    return found


def to_vgf(graph: Graph, *, replicate_splats: bool = True) -> VGF:
    """The VGF object model of `graph` (see pyvgf.build.spirv.emit for the options)."""
    module = emit(graph, replicate_splats=replicate_splats)
    resources: list[Resource] = []
    inputs: list[BindingSlot] = []
    outputs: list[BindingSlot] = []
    values = [("input", v) for v in graph.inputs] + [("output", v) for v in graph.outputs]
    unsigned = _unsigned_nodes(graph)
    for (role, value), binding in zip(values, module.bindings):
        category = Category.INPUT if role == "input" else Category.OUTPUT
        slot = BindingSlot(binding=binding, mrt_index=len(resources))
        resources.append(_resource(value.spec, category, f"graph {role}", value.node in unsigned))
        (inputs if role == "input" else outputs).append(slot)
    constants: list[Constant] = []
    bindings: list[ConstantBinding] = []
    for const in module.constants:
        resources.append(_resource(const.spec, Category.CONSTANT, "constant"))
        raw = np.ascontiguousarray(const.data).view(np.uint8).reshape(-1).copy()
        raw.setflags(write=False)
        bindings.append(ConstantBinding(const.graph_constant_id, len(constants)))
        constants.append(Constant(mrt_index=len(resources) - 1, data=raw))
    segment = Segment(
        type=ModuleType.GRAPH,
        name=SEGMENT_NAME,
        module_index=0,
        set_infos=[DescriptorSetInfo(bindings=inputs + outputs, set_index=0)],
        inputs=list(inputs),
        outputs=list(outputs),
        constants=list(range(len(constants))),
        dispatch_shape=[0, 0, 0],
        constant_bindings=bindings,
    )
    return VGF(
        header=Header(version=(0, 5, 0), vk_header_version=0),
        modules=[Module(ModuleType.GRAPH, module.entry_point, module.entry_point, CodeType.SPIRV, module.words)],
        sequence=ModelSequence(
            segments=[segment],
            inputs=list(inputs),
            outputs=list(outputs),
            input_names=[f"input_{i}" for i in range(len(graph.inputs))],
            output_names=[f"output_{i}" for i in range(len(graph.outputs))],
        ),
        resources=resources,
        constants=constants,
    )
