"""Write a Graph as a SPIR-V graph module, laid out as model-converter lays its modules out.

Capabilities Shader, TensorsARM, GraphARM, VulkanMemoryModel (plus the ones the element types
need), memory model Logical/Vulkan, one OpGraphARM whose interface variables are decorated
DescriptorSet 0 and Binding k (inputs first, then outputs). Tensor constants of 16 elements or
fewer are SPIR-V constants (zero tensors OpConstantNull, splats OpConstantCompositeReplicateEXT);
larger ones are OpGraphConstantARM whose data goes into the VGF constant section. An op with
several results (FFT2D, RFFT2D) has an OpTypeStruct result type, and an OpCompositeExtract of
each result, used or not, follows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import TosaError
from ._grammar import TOSA_OPCODES, TOSA_SET, enum, opcode
from .dtypes import ElementType, element_type
from .graph import Graph, TensorSpec, Value
from .signatures import ENUMERATIONS, Kind, signature

MAGIC = 0x07230203
VERSION_1_5 = 0x00010500
INLINE_LIMIT = 16
"""Tensor constants with at most this many elements are inlined as SPIR-V constants."""
GRAPH_NAME = "graph_partition_0"

_I32 = element_type(np.int32)
_BASE_CAPABILITIES = ("Shader", "TensorsARM", "GraphARM", "VulkanMemoryModel", "Matrix", "Int8")
_BASE_EXTENSIONS = ("SPV_ARM_tensors", "SPV_ARM_graph", "SPV_KHR_vulkan_memory_model")


@dataclass
class GraphConstant:
    """A constant tensor that lives in the VGF constant section."""

    graph_constant_id: int
    spec: TensorSpec
    data: np.ndarray


@dataclass
class SpirvModule:
    words: np.ndarray
    """The module, uint32 words."""
    entry_point: str
    bindings: list[int]
    """Binding number of each interface variable: graph inputs, then outputs."""
    constants: list[GraphConstant] = field(default_factory=list)


def _string(text: str) -> list[int]:
    raw = text.encode() + b"\0"
    raw += b"\0" * (-len(raw) % 4)
    return np.frombuffer(raw, dtype="<u4").tolist()


def _scalar_words(etype: ElementType, value: object) -> list[int]:
    """The literal words of one scalar constant of `etype` (narrow types zero-extended)."""
    kind = etype.spirv[0]
    width = etype.spirv[1]
    if kind == "float":
        bits = int(np.array(value, dtype=etype.dtype).view(f"<u{width // 8}"))
    else:
        bits = int(value) & ((1 << width) - 1)
    if width > 32:
        return [bits & 0xFFFFFFFF, bits >> 32]
    return [bits]


class _Writer:
    def __init__(self, replicate: bool) -> None:
        self.replicate = replicate
        self.bound = 1
        self.capabilities: list[str] = list(_BASE_CAPABILITIES)
        self.extensions: list[str] = list(_BASE_EXTENSIONS)
        self.names: list[int] = []
        self.decorations: list[int] = []
        self.globals: list[int] = []
        self.graph: list[int] = []
        self.cache: dict[tuple, int] = {}
        self.graph_constants: list[GraphConstant] = []
        self.ext = self.new_id()

    def new_id(self) -> int:
        self.bound += 1
        return self.bound - 1

    @staticmethod
    def inst(section: list[int], name: str, *operands: int) -> None:
        section.append(((len(operands) + 1) << 16) | opcode(name))
        section.extend(operands)

    def need(self, capability: str, extension: str | None = None) -> None:
        if capability not in self.capabilities:
            self.capabilities.append(capability)
        if extension is not None and extension not in self.extensions:
            self.extensions.append(extension)

    def cached(self, key: tuple, make) -> int:
        if key not in self.cache:
            self.cache[key] = make()
        return self.cache[key]

    # types
    def scalar_type(self, etype: ElementType) -> int:
        spirv = etype.spirv

        def make() -> int:
            rid = self.new_id()
            if spirv[0] == "bool":
                self.inst(self.globals, "OpTypeBool", rid)
            elif spirv[0] == "int":
                if spirv[1] == 16:
                    self.need("Int16")
                elif spirv[1] > 32:
                    self.need("Int64")
                self.inst(self.globals, "OpTypeInt", rid, spirv[1], 0)
            elif spirv[2] is None:
                if spirv[1] == 16:
                    self.need("Float16")
                self.inst(self.globals, "OpTypeFloat", rid, spirv[1])
            else:
                if spirv[2] == "BFloat16KHR":
                    self.need("BFloat16TypeKHR", "SPV_KHR_bfloat16")
                else:
                    self.need("Float8EXT", "SPV_EXT_float8")
                self.inst(self.globals, "OpTypeFloat", rid, spirv[1], enum("FPEncoding", spirv[2]))
            return rid

        return self.cached(("type", spirv), make)

    def u32(self, value: int) -> int:
        return self.scalar(_I32, value)

    def tensor_type(self, spec: TensorSpec) -> int:
        """The OpTypeTensorARM of `spec`; a rank-0 tensor is shape [1], as model-converter
        writes it (a Vulkan tensor has at least one dimension; the VGF resource keeps [])."""
        if not spec.shape:
            spec = TensorSpec(spec.etype, (1,))

        def make() -> int:
            elem = self.scalar_type(spec.etype)
            rank = len(spec.shape)
            array = self.cached(("array", rank), lambda: self._array_type(rank))
            shape = self.cached(("shape", spec.shape),
                                lambda: self._composite(array, [self.u32(d) for d in spec.shape]))
            rid = self.new_id()
            self.inst(self.globals, "OpTypeTensorARM", rid, elem, self.u32(rank), shape)
            return rid

        return self.cached(("tensor", spec), make)

    def struct_type(self, specs: tuple[TensorSpec, ...]) -> int:
        """The OpTypeStruct of an op's several results (FFT2D, RFFT2D)."""
        members = [self.tensor_type(spec) for spec in specs]

        def make() -> int:
            rid = self.new_id()
            self.inst(self.globals, "OpTypeStruct", rid, *members)
            return rid

        return self.cached(("struct", tuple(members)), make)

    def _array_type(self, length: int) -> int:
        rid = self.new_id()
        self.inst(self.globals, "OpTypeArray", rid, self.scalar_type(_I32), self.u32(length))
        return rid

    def _composite(self, type_id: int, parts: list[int]) -> int:
        rid = self.new_id()
        self.inst(self.globals, "OpConstantComposite", type_id, rid, *parts)
        return rid

    # constants
    def scalar(self, etype: ElementType, value: object) -> int:
        type_id = self.scalar_type(etype)
        if etype.spirv[0] == "bool":
            flag = bool(value)

            def make_bool() -> int:
                rid = self.new_id()
                self.inst(self.globals, "OpConstantTrue" if flag else "OpConstantFalse", type_id, rid)
                return rid

            return self.cached(("bool", flag), make_bool)
        words = _scalar_words(etype, value)

        def make() -> int:
            rid = self.new_id()
            self.inst(self.globals, "OpConstant", type_id, rid, *words)
            return rid

        return self.cached(("const", etype.spirv, tuple(words)), make)

    def tensor_constant(self, spec: TensorSpec, data: np.ndarray) -> int:
        """A constant tensor: inline when small, else an OpGraphConstantARM."""
        if data.size > INLINE_LIMIT:
            gid = len(self.graph_constants)
            self.graph_constants.append(GraphConstant(gid, spec, data))
            rid = self.new_id()
            self.inst(self.globals, "OpGraphConstantARM", self.tensor_type(spec), rid, gid)
            return rid
        return self._inline(spec, data)

    def _inline(self, spec: TensorSpec, data: np.ndarray, top: bool = True, splat: bool = True) -> int:
        """An inline tensor constant. Only a whole constant may be OpConstantNull or a
        replicated splat (the emulation layer takes only plain constituents in composites);
        attribute and shape tensors are never replicated (as model-converter writes them)."""
        if not spec.shape:
            spec, data = TensorSpec(spec.etype, (1,)), data.reshape(1)
        key = ("tensor-const", spec, data.tobytes(), top, splat)
        if key in self.cache:
            return self.cache[key]
        type_id = self.tensor_type(spec)
        flat = data.reshape(-1)
        rid = self.new_id()
        if top and not flat.any():
            self.inst(self.globals, "OpConstantNull", type_id, rid)
        elif top and splat and self.replicate and flat.size > 1 and (flat == flat[0]).all() and flat[0] == flat[0]:
            self.need("ReplicatedCompositesEXT", "SPV_EXT_replicated_composites")
            self.inst(self.globals, "OpConstantCompositeReplicateEXT", type_id, rid, self.scalar(spec.etype, flat[0]))
        elif len(spec.shape) == 1:
            parts = [self.scalar(spec.etype, v) for v in flat]
            self.inst(self.globals, "OpConstantComposite", type_id, rid, *parts)
        else:
            inner = TensorSpec(spec.etype, spec.shape[1:])
            parts = [self._inline(inner, row, top=False) for row in data]
            self.inst(self.globals, "OpConstantComposite", type_id, rid, *parts)
        self.cache[key] = rid
        return rid

    def int_tensor(self, values: tuple[int, ...]) -> int:
        data = np.array(values, dtype=np.int32)
        return self._inline(TensorSpec(_I32, (len(values),)), data, splat=False)

    def header(self) -> list[int]:
        return [MAGIC, VERSION_1_5, 0, self.bound, 0]


def emit(graph: Graph, *, replicate_splats: bool = True) -> SpirvModule:
    """The SPIR-V graph module of `graph`.

    replicate_splats: write splat tensors as OpConstantCompositeReplicateEXT (as model-converter
    does unless given --disable-replicated-composites).
    """
    if not graph.outputs:
        raise TosaError("the graph has no outputs")
    w = _Writer(replicate_splats)
    interface: list[int] = []
    bindings: list[int] = []
    io_types: list[int] = []
    for role, values in (("arg", graph.inputs), ("res", graph.outputs)):
        for i, value in enumerate(values):
            tensor = w.tensor_type(value.spec)
            io_types.append(tensor)
            pointer = w.cached(("ptr", tensor), lambda t=tensor: _pointer(w, t))
            var = w.new_id()
            w.inst(w.globals, "OpVariable", pointer, var, enum("StorageClass", "UniformConstant"))
            binding = len(bindings)
            w.inst(w.names, "OpName", var, *_string(f"{GRAPH_NAME}_{role}_{i}"))
            w.inst(w.decorations, "OpDecorate", var, enum("Decoration", "Binding"), binding)
            w.inst(w.decorations, "OpDecorate", var, enum("Decoration", "DescriptorSet"), 0)
            interface.append(var)
            bindings.append(binding)
    graph_type = w.new_id()
    w.inst(w.globals, "OpTypeGraphARM", graph_type, len(graph.inputs), *io_types)

    graph_id = w.new_id()
    ids: dict[tuple[int, int], int] = {}
    """(node, element) -> the id of that value."""
    body: list[int] = []
    for i, value in enumerate(graph.inputs):
        rid = w.new_id()
        w.inst(body, "OpGraphInputARM", w.tensor_type(value.spec), rid, w.u32(i))
        ids[value.node, 0] = rid
    for index, node in enumerate(graph.nodes):
        if node.kind != "op":
            continue  # constants are emitted where first used, so unused ones cost nothing
        operands = []
        for name, kind in signature(node.op):
            operands.extend(_operand(w, graph, ids, node, name, kind))
        rid = w.new_id()
        specs = node.result if isinstance(node.result, tuple) else None
        type_id = w.struct_type(specs) if specs else w.tensor_type(node.result)
        w.inst(body, "OpExtInst", type_id, rid, w.ext, TOSA_OPCODES[node.op], *operands)
        if node.debug_name:
            w.inst(w.names, "OpName", rid, *_string(node.debug_name))
        if specs:  # every result extracted at once, as model-converter does
            for element, spec in enumerate(specs):
                ids[index, element] = w.new_id()
                w.inst(body, "OpCompositeExtract", w.tensor_type(spec), ids[index, element], rid, element)
        else:
            ids[index, 0] = rid
    for i, value in enumerate(graph.outputs):
        w.inst(body, "OpGraphSetOutputARM", _value_id(w, graph, ids, value), w.u32(i))
    w.inst(body, "OpGraphEndARM")

    entry: list[int] = []
    w.inst(entry, "OpGraphEntryPointARM", graph_id, *_string(GRAPH_NAME), *interface)
    w.inst(entry, "OpGraphARM", graph_type, graph_id)

    words: list[int] = []
    for cap in w.capabilities:
        w.inst(words, "OpCapability", enum("Capability", cap))
    for ext in w.extensions:
        w.inst(words, "OpExtension", *_string(ext))
    w.inst(words, "OpExtInstImport", w.ext, *_string(TOSA_SET))
    w.inst(words, "OpMemoryModel", enum("AddressingModel", "Logical"), enum("MemoryModel", "Vulkan"))
    module = w.header() + words + w.names + w.decorations + w.globals + entry + body
    return SpirvModule(np.array(module, dtype=np.uint32), GRAPH_NAME, bindings, w.graph_constants)


def _pointer(w: _Writer, tensor: int) -> int:
    rid = w.new_id()
    w.inst(w.globals, "OpTypePointer", rid, enum("StorageClass", "UniformConstant"), tensor)
    return rid


def _value_id(w: _Writer, graph: Graph, ids: dict[tuple[int, int], int], value: Value) -> int:
    if (value.node, value.element) in ids:
        return ids[value.node, value.element]
    node = graph.nodes[value.node]
    return w.tensor_constant(node.result, node.data)


def _operand(w: _Writer, graph: Graph, ids: dict[tuple[int, int], int], node, name: str, kind: Kind) -> list[int]:
    value = node.operands[name]
    if kind is Kind.TENSOR:
        values = value if isinstance(value, list) else [value]
        return [_value_id(w, graph, ids, v) for v in values]
    if kind is Kind.ENUM:
        return [w.u32(ENUMERATIONS[name][value])]
    if kind is Kind.BOOL:
        return [w.scalar(element_type(np.bool_), value)]
    if kind is Kind.INT:
        return [w.u32(value)]
    if kind is Kind.VALUE:
        first = next(v for n, v in node.operands.items() if isinstance(v, Value))
        return [w.scalar(first.spec.etype, value)]
    return [w.int_tensor(value)]
