"""Scenario JSON -> a checked `ScenarioPlan`: every field typed, every reference resolved.

The format is Arm's scenario runner's (docs/source/json.rst of arm/ai-ml-sdk-scenario-runner):
`{"resources": [{KIND: {...}}, ...], "commands": [{KIND: {...}}, ...]}`. Relative `src` paths
are resolved against the scenario file's folder, relative `dst` paths against the output folder,
as scenario_runner does. Whatever pyvgf does not run (images, optical flow, fragment shaders,
specialization constants, ...) and every malformed entry is a `ScenarioError` whose message
starts with the JSON path of the entry, e.g. `commands[2].dispatch_compute.push_data_ref`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ScenarioError
from ..format.model import numpy_dtype
from ..vknames import FORMAT

FORMATS = {name: value for value, name in FORMAT.items()}
"""VkFormat name -> value, for the names the scenario file spells out."""

ACCESS = ("readonly", "writeonly", "readwrite", "image_read")
MEMORY_ACCESS = ("compute_shader_write", "compute_shader_read", "graph_write", "graph_read",
                 "memory_write", "memory_read")
STAGES = ("graph", "compute", "graphics", "all")
SHADER_TYPES = {"SPIR-V": "spirv", "GLSL": "glsl", "HLSL": "hlsl"}

UNSUPPORTED_RESOURCES = {
    "image": "images (pyvgf runs tensors and buffers)",
    "image_barrier": "image barriers (pyvgf runs tensors and buffers)",
    "graph_constant": "graph constants of dispatch_spirv_graph",
}
UNSUPPORTED_COMMANDS = {
    "dispatch_fragment": "fragment pipelines",
    "dispatch_optical_flow": "optical flow",
    "dispatch_spirv_graph": "SPIR-V-only graphs (dispatch_graph of a VGF is supported)",
    "dispatch_data_graph": "SPIR-V-only graphs (dispatch_graph of a VGF is supported)",
}



# -- the plan ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryGroup:
    id: str
    offset: int = 0


@dataclass(frozen=True)
class TensorResource:
    uid: str
    path: str
    format: int
    dims: tuple[int, ...]
    access: str
    src: Path | None = None
    dst: Path | None = None
    memory_group: MemoryGroup | None = None
    tiling: str | None = None


@dataclass(frozen=True)
class BufferResource:
    uid: str
    path: str
    size: int
    access: str
    src: Path | None = None
    dst: Path | None = None
    memory_group: MemoryGroup | None = None


@dataclass(frozen=True)
class RawData:
    uid: str
    path: str
    src: Path


@dataclass(frozen=True)
class ShaderResource:
    uid: str
    path: str
    src: Path
    type: str
    """"spirv", "glsl" or "hlsl"."""
    entry: str = "main"
    push_constants_size: int = 0


@dataclass(frozen=True)
class GraphResource:
    uid: str
    path: str
    src: Path
    substitutions: dict[str, str] = field(default_factory=dict)
    """Target (VGF compute module name) -> shader uid."""
    push_constants_size: int = 0


@dataclass(frozen=True)
class Barrier:
    uid: str
    path: str
    kind: str
    """"memory_barrier", "tensor_barrier" or "buffer_barrier"."""
    resource: str | None = None
    """The tensor or buffer it names (None for a memory barrier)."""


@dataclass(frozen=True)
class Binding:
    set: int
    id: int
    resource: str
    path: str


@dataclass(frozen=True)
class DispatchGraph:
    path: str
    graph: str
    bindings: tuple[Binding, ...]
    substitutions: dict[str, str] = field(default_factory=dict)
    """Target -> shader uid: the graph resource's, overridden by the command's."""
    push_constants: dict[str, str] = field(default_factory=dict)
    """Target (VGF compute module name) -> raw_data uid."""
    implicit_barrier: bool = True


@dataclass(frozen=True)
class DispatchCompute:
    path: str
    shader: str
    bindings: tuple[Binding, ...]
    range_nd: tuple[int, int, int]
    push_data: str | None = None
    implicit_barrier: bool = True


@dataclass(frozen=True)
class DispatchBarrier:
    path: str
    barriers: tuple[str, ...]


@dataclass(frozen=True)
class MarkBoundary:
    path: str
    resources: tuple[str, ...]


Resource = TensorResource | BufferResource | RawData | ShaderResource | GraphResource | Barrier
Command = DispatchGraph | DispatchCompute | DispatchBarrier | MarkBoundary


@dataclass(frozen=True)
class ScenarioPlan:
    """A parsed, checked scenario: resources by uid (in file order) and the commands in order."""

    file: Path | None
    output: Path
    """Where relative `dst` paths go."""
    resources: dict[str, Resource]
    commands: tuple[Command, ...]

    def outputs(self) -> list[TensorResource | BufferResource]:
        """The tensors and buffers with a `dst`, in file order (the order they are written)."""
        return [r for r in self.resources.values() if isinstance(r, (TensorResource, BufferResource)) and r.dst]


# -- typed access to JSON values, with their paths --------------------------------------------


class _Obj:
    """A JSON object at `path`: typed getters that raise ScenarioError naming the field."""

    def __init__(self, value: Any, path: str, allowed: tuple[str, ...]):
        if not isinstance(value, dict):
            raise ScenarioError(f"must be an object, got {_kind(value)}", path=path)
        self.value = value
        self.path = path
        for key in value:
            if key not in allowed:
                raise ScenarioError(f"unknown field {key!r} (known: {', '.join(allowed)})", path=path)

    def at(self, key: str) -> str:
        return f"{self.path}.{key}"

    def has(self, key: str) -> bool:
        return key in self.value

    def get(self, key: str, check: Callable[[Any, str], Any], default: Any = ...) -> Any:
        if key not in self.value:
            if default is ...:
                raise ScenarioError(f"missing required field {key!r}", path=self.path)
            return default
        return check(self.value[key], self.at(key))


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null",
            int: "an integer", float: "a number"}.get(type(value), type(value).__name__)


def _string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise ScenarioError(f"must be a string, got {_kind(value)}", path=path)
    if "\0" in value:
        raise ScenarioError("must not contain a NUL character", path=path)
    return value


def _uid(value: Any, path: str) -> str:
    text = _string(value, path)
    if not text:
        raise ScenarioError("must not be empty", path=path)
    return text


def _int(low: int = 0, high: int = 2**32 - 1) -> Callable[[Any, str], int]:
    def check(value: Any, path: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScenarioError(f"must be an integer, got {_kind(value)}", path=path)
        if not low <= value <= high:
            raise ScenarioError(f"must be in {low}..{high}, got {value}", path=path)
        return value

    return check


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise ScenarioError(f"must be true or false, got {_kind(value)}", path=path)
    return value


def _choice(options: tuple[str, ...]) -> Callable[[Any, str], str]:
    def check(value: Any, path: str) -> str:
        text = _string(value, path)
        if text not in options:
            raise ScenarioError(f"must be one of {', '.join(options)}; got {text!r}", path=path)
        return text

    return check


def _array(item: Callable[[Any, str], Any]) -> Callable[[Any, str], list]:
    def check(value: Any, path: str) -> list:
        if not isinstance(value, list):
            raise ScenarioError(f"must be an array, got {_kind(value)}", path=path)
        return [item(v, f"{path}[{i}]") for i, v in enumerate(value)]

    return check


def _format(value: Any, path: str) -> int:
    name = _string(value, path)
    vk_format = FORMATS.get(name)
    if vk_format is None:
        raise ScenarioError(f"{name!r} is not a VkFormat name", path=path)
    try:
        numpy_dtype(vk_format)
    except ValueError:
        raise ScenarioError(f"{name} is not a one-component tensor format pyvgf runs", path=path) from None
    return vk_format


def _unsupported(obj: _Obj, key: str, what: str, empty: Any = None) -> None:
    """Refuse a field pyvgf does not implement, unless it holds its neutral value `empty`."""
    if obj.has(key) and obj.value[key] not in (empty, [], None):
        raise ScenarioError(f"{what} are not supported by pyvgf", path=obj.at(key))


def _substitutions(value: Any, path: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for i, item in enumerate(_array(lambda v, p: v)(value, path)):
        sub = _Obj(item, f"{path}[{i}]", ("shader_ref", "target"))
        target = sub.get("target", _uid)
        if target in found:
            raise ScenarioError(f"target {target!r} is substituted twice", path=sub.at("target"))
        found[target] = sub.get("shader_ref", _uid)
    return found


# -- resources ----------------------------------------------------------------------------------


class _Parser:
    def __init__(self, base: Path, output: Path):
        self.base = base
        self.output = output

    def src(self, value: Any, path: str) -> Path:
        return self.base / self._path(value, path)

    def dst(self, value: Any, path: str) -> Path:
        return self.output / self._path(value, path)

    @staticmethod
    def _path(value: Any, path: str) -> str:
        text = _string(value, path)
        if not text:
            raise ScenarioError("must not be an empty path", path=path)
        return text

    def memory_group(self, value: Any, path: str) -> MemoryGroup:
        obj = _Obj(value, path, ("id", "offset"))
        return MemoryGroup(obj.get("id", _uid), obj.get("offset", _int(0, 2**63 - 1), 0))

    def tensor(self, obj: _Obj) -> TensorResource:
        if obj.has("alias_target"):
            raise ScenarioError("alias_target is deprecated in scenario files: use memory_group",
                                path=obj.at("alias_target"))
        dims = obj.get("dims", _array(_int(1, 2**31 - 1)))
        if not 1 <= len(dims) <= 8:
            raise ScenarioError(f"a tensor has 1 to 8 dimensions, got {len(dims)}", path=obj.at("dims"))
        return TensorResource(
            obj.get("uid", _uid), obj.path, obj.get("format", _format), tuple(dims),
            obj.get("shader_access", _choice(ACCESS)), obj.get("src", self.src, None), obj.get("dst", self.dst, None),
            obj.get("memory_group", self.memory_group, None), obj.get("tiling", _choice(("OPTIMAL", "LINEAR")), None))

    def buffer(self, obj: _Obj) -> BufferResource:
        return BufferResource(
            obj.get("uid", _uid), obj.path, obj.get("size", _int(1)), obj.get("shader_access", _choice(ACCESS[:3])),
            obj.get("src", self.src, None), obj.get("dst", self.dst, None),
            obj.get("memory_group", self.memory_group, None))

    def raw_data(self, obj: _Obj) -> RawData:
        return RawData(obj.get("uid", _uid), obj.path, obj.get("src", self.src))

    def shader(self, obj: _Obj) -> ShaderResource:
        _unsupported(obj, "specialization_constants", "specialization constants")
        stage = obj.get("stage", _choice(("compute", "vertex", "fragment")), "compute")
        if stage != "compute":
            raise ScenarioError(f"{stage} shaders are not supported by pyvgf (compute only)", path=obj.at("stage"))
        obj.get("build_options", _string, "")
        obj.get("include_dirs", _array(_string), [])
        kind = SHADER_TYPES[obj.get("type", _choice(tuple(SHADER_TYPES)))]
        entry = obj.get("entry", _uid, "main")
        if kind == "glsl" and entry != "main":
            raise ScenarioError("a GLSL shader's entry point must be 'main'", path=obj.at("entry"))
        size = obj.get("push_constants_size", _int(0, 2**16), 0)
        if size % 4:
            raise ScenarioError(f"must be a multiple of 4, got {size}", path=obj.at("push_constants_size"))
        return ShaderResource(obj.get("uid", _uid), obj.path, obj.get("src", self.src), kind, entry, size)

    def graph(self, obj: _Obj) -> GraphResource:
        _unsupported(obj, "specialization_constants_map", "specialization constants")
        size = obj.get("push_constants_size", _int(0, 2**16), 0)
        return GraphResource(obj.get("uid", _uid), obj.path, obj.get("src", self.src),
                             obj.get("shader_substitutions", _substitutions, {}), size)

    def barrier(self, obj: _Obj, kind: str) -> Barrier:
        obj.get("src_access", _choice(MEMORY_ACCESS))
        obj.get("dst_access", _choice(MEMORY_ACCESS))
        obj.get("src_stage", _array(_choice(STAGES)), [])
        obj.get("dst_stage", _array(_choice(STAGES)), [])
        resource = None
        if kind == "tensor_barrier":
            resource = obj.get("tensor_resource", _uid)
        elif kind == "buffer_barrier":
            resource = obj.get("buffer_resource", _uid)
            obj.get("size", _int(0, 2**64 - 1))
            obj.get("offset", _int(0, 2**64 - 1), 0)
        return Barrier(obj.get("uid", _uid), obj.path, kind, resource)


_RESOURCE_FIELDS = {
    "tensor": ("uid", "dims", "format", "shader_access", "src", "dst", "memory_group", "tiling", "alias_target"),
    "buffer": ("uid", "size", "shader_access", "src", "dst", "memory_group"),
    "raw_data": ("uid", "src"),
    "shader": ("uid", "src", "entry", "type", "stage", "build_options", "include_dirs", "push_constants_size",
               "specialization_constants"),
    "graph": ("uid", "src", "specialization_constants_map", "shader_substitutions", "push_constants_size"),
    "memory_barrier": ("uid", "src_access", "dst_access", "src_stage", "dst_stage"),
    "tensor_barrier": ("uid", "tensor_resource", "src_access", "dst_access", "src_stage", "dst_stage"),
    "buffer_barrier": ("uid", "buffer_resource", "size", "offset", "src_access", "dst_access", "src_stage",
                       "dst_stage"),
}

_BINDING_FIELDS = ("set", "id", "resource_ref", "lod", "descriptor_type")


def _single(value: Any, path: str, what: str) -> tuple[str, Any, str]:
    """The one `{KIND: body}` of a resources/commands entry."""
    if not isinstance(value, dict):
        raise ScenarioError(f"a {what} entry must be an object {{KIND: {{...}}}}, got {_kind(value)}", path=path)
    if len(value) != 1:
        keys = ", ".join(map(repr, value)) or "none"
        raise ScenarioError(f"a {what} entry holds exactly one kind, got {keys}", path=path)
    ((kind, body),) = value.items()
    return kind, body, f"{path}.{kind}"


def _bindings(value: Any, path: str) -> tuple[Binding, ...]:
    result, seen = [], {}
    for i, item in enumerate(_array(lambda v, p: v)(value, path)):
        obj = _Obj(item, f"{path}[{i}]", _BINDING_FIELDS)
        if obj.get("lod", _int(), 0):
            raise ScenarioError("image levels of detail are not supported by pyvgf", path=obj.at("lod"))
        obj.get("descriptor_type", _choice(("VK_DESCRIPTOR_TYPE_AUTO",)), None)
        binding = Binding(obj.get("set", _int()), obj.get("id", _int()), obj.get("resource_ref", _uid), obj.path)
        key = (binding.set, binding.id)
        if key in seen:
            raise ScenarioError(f"set {key[0]} id {key[1]} is bound twice (also at {seen[key]})", path=obj.path)
        seen[key] = obj.path
        result.append(binding)
    return tuple(result)


def _dispatch_graph(obj: _Obj, resources: dict[str, Resource]) -> DispatchGraph:
    graph = _ref(resources, obj, "graph_ref", GraphResource)
    pushes: dict[str, str] = {}
    for i, item in enumerate(obj.get("push_constants", _array(lambda v, p: v), [])):
        pc = _Obj(item, f"{obj.at('push_constants')}[{i}]", ("push_data_ref", "shader_target"))
        target = pc.get("shader_target", _uid)
        if target in pushes:
            raise ScenarioError(f"shader target {target!r} gets push constants twice", path=pc.path)
        pushes[target] = _ref(resources, pc, "push_data_ref", RawData).uid
    subs = {**graph.substitutions, **obj.get("shader_substitutions", _substitutions, {})}
    for target, uid in subs.items():
        if not isinstance(resources.get(uid), ShaderResource):
            raise ScenarioError(f"shader_ref {uid!r} of target {target!r} names no shader resource",
                                path=obj.at("shader_substitutions"))
    bindings = _checked_bindings(obj, resources)
    return DispatchGraph(obj.path, graph.uid, bindings, subs, pushes, obj.get("implicit_barrier", _bool, True))


def _dispatch_compute(obj: _Obj, resources: dict[str, Resource]) -> DispatchCompute:
    shader = _ref(resources, obj, "shader_ref", ShaderResource)
    push = _ref(resources, obj, "push_data_ref", RawData).uid if obj.get("push_data_ref", _string, "") else None
    size = obj.get("rangeND", _array(_int(0, 2**31 - 1)))
    if not 1 <= len(size) <= 3:
        raise ScenarioError(f"rangeND has 1 to 3 workgroup counts, got {len(size)}", path=obj.at("rangeND"))
    bindings = _checked_bindings(obj, resources)
    return DispatchCompute(obj.path, shader.uid, bindings, tuple(size + [1] * (3 - len(size))), push,
                           obj.get("implicit_barrier", _bool, True))


def _dispatch_barrier(obj: _Obj, resources: dict[str, Resource]) -> DispatchBarrier:
    if obj.get("image_barrier_refs", _array(_uid), []):
        raise ScenarioError("image barriers are not supported by pyvgf", path=obj.at("image_barrier_refs"))
    refs = []
    for key in ("memory_barrier_refs", "tensor_barrier_refs", "buffer_barrier_refs"):
        want = key.removesuffix("_refs")
        for i, uid in enumerate(obj.get(key, _array(_uid), [])):
            found = resources.get(uid)
            if not isinstance(found, Barrier) or found.kind != want:
                raise ScenarioError(f"{uid!r} names no {want} resource", path=f"{obj.at(key)}[{i}]")
            refs.append(uid)
    return DispatchBarrier(obj.path, tuple(refs))


def _mark_boundary(obj: _Obj, resources: dict[str, Resource]) -> MarkBoundary:
    names = obj.get("resources", _array(_uid))
    for i, uid in enumerate(names):
        if uid not in resources:
            raise ScenarioError(f"{uid!r} names no resource", path=f"{obj.at('resources')}[{i}]")
    return MarkBoundary(obj.path, tuple(names))


_GRAPH_FIELDS = ("graph_ref", "bindings", "push_constants", "implicit_barrier", "shader_substitutions")
_COMMANDS: dict[str, tuple[tuple[str, ...], Callable[[_Obj, dict[str, Resource]], Command]]] = {
    "dispatch_graph": (_GRAPH_FIELDS, _dispatch_graph),
    "dispatch_vgf": (_GRAPH_FIELDS, _dispatch_graph),
    "dispatch_compute": (("shader_ref", "push_data_ref", "rangeND", "bindings", "implicit_barrier"),
                         _dispatch_compute),
    "dispatch_barrier": (("memory_barrier_refs", "tensor_barrier_refs", "buffer_barrier_refs",
                          "image_barrier_refs"), _dispatch_barrier),
    "mark_boundary": (("resources", "frame_id"), _mark_boundary),
}
"""Each command pyvgf runs: its fields and its parser. dispatch_vgf is scenario_runner 0.11's name
for dispatch_graph, which it still accepts."""


def _commands(items: list, resources: dict[str, Resource]) -> tuple[Command, ...]:
    commands: list[Command] = []
    for n, item in enumerate(items):
        kind, body, path = _single(item, f"commands[{n}]", "commands")
        if kind in UNSUPPORTED_COMMANDS:
            raise ScenarioError(f"{UNSUPPORTED_COMMANDS[kind]} are not supported by pyvgf", path=path)
        if kind not in _COMMANDS:
            raise ScenarioError(f"unknown command {kind!r} (pyvgf runs {', '.join(_COMMANDS)})", path=f"commands[{n}]")
        fields, parse_command = _COMMANDS[kind]
        commands.append(parse_command(_Obj(body, path, fields), resources))
    return tuple(commands)


def _ref(resources: dict[str, Resource], obj: _Obj, key: str, kind: type) -> Resource:
    uid = obj.get(key, _uid)
    found = resources.get(uid)
    if not isinstance(found, kind):
        what = {GraphResource: "graph", ShaderResource: "shader", RawData: "raw_data"}[kind]
        raise ScenarioError(f"{uid!r} names no {what} resource", path=obj.at(key))
    return found


def _checked_bindings(obj: _Obj, resources: dict[str, Resource]) -> tuple[Binding, ...]:
    bindings = obj.get("bindings", _bindings)
    for b in bindings:
        if not isinstance(resources.get(b.resource), (TensorResource, BufferResource)):
            raise ScenarioError(f"resource_ref {b.resource!r} names no tensor or buffer resource", path=b.path)
    return bindings


def parse(data: Any, base: str | os.PathLike = ".", output: str | os.PathLike | None = None,
          file: Path | None = None) -> ScenarioPlan:
    """Check a decoded scenario (`json.load`'s result) and resolve it into a ScenarioPlan.

    Relative `src` paths resolve against `base`, relative `dst` paths against `output`
    (default: `base`), as scenario_runner's do.
    """
    base = Path(base)
    output = Path(output) if output is not None else base
    parser = _Parser(base, output)
    root = _Obj(data, "scenario", ("resources", "commands"))
    items = root.get("resources", _array(lambda v, p: v))
    resources: dict[str, Resource] = {}
    for n, item in enumerate(items):
        kind, body, path = _single(item, f"resources[{n}]", "resources")
        if kind in UNSUPPORTED_RESOURCES:
            raise ScenarioError(f"{UNSUPPORTED_RESOURCES[kind]} are not supported by pyvgf", path=path)
        fields = _RESOURCE_FIELDS.get(kind)
        if fields is None:
            known = ", ".join([*_RESOURCE_FIELDS, *UNSUPPORTED_RESOURCES])
            raise ScenarioError(f"unknown resource kind {kind!r} (known: {known})", path=f"resources[{n}]")
        obj = _Obj(body, path, fields)
        if kind.endswith("barrier"):
            resource = parser.barrier(obj, kind)
        else:
            resource = getattr(parser, kind)(obj)
        if resource.uid in resources:
            raise ScenarioError(f"uid {resource.uid!r} is used twice (also at {resources[resource.uid].path})",
                                path=obj.at("uid"))
        resources[resource.uid] = resource
    for r in resources.values():
        if isinstance(r, Barrier) and r.resource is not None:
            want = TensorResource if r.kind == "tensor_barrier" else BufferResource
            if not isinstance(resources.get(r.resource), want):
                key = "tensor_resource" if want is TensorResource else "buffer_resource"
                raise ScenarioError(f"{r.resource!r} names no {key.split('_')[0]} resource", path=f"{r.path}.{key}")
        if isinstance(r, GraphResource):
            for target, uid in r.substitutions.items():
                if not isinstance(resources.get(uid), ShaderResource):
                    raise ScenarioError(f"shader_ref {uid!r} of target {target!r} names no shader resource",
                                        path=f"{r.path}.shader_substitutions")
    _check_dsts(resources)
    commands = _commands(root.get("commands", _array(lambda v, p: v)), resources)
    return ScenarioPlan(file, output, resources, commands)


def _check_dsts(resources: dict[str, Resource]) -> None:
    """Refuse a `dst` that names a file the scenario reads (a `src`: its VGF, a shader, an
    input): writing it would destroy that input."""
    read = {}
    for r in resources.values():
        src = getattr(r, "src", None)
        if src is not None:
            read.setdefault(Path(src).resolve(), r.path)
    for r in resources.values():
        dst = getattr(r, "dst", None)
        if dst is not None and (source := read.get(Path(dst).resolve())) is not None:
            raise ScenarioError(f"writes {dst}, which the scenario reads ({source}.src): an output "
                                f"must not overwrite an input", path=f"{r.path}.dst")


def load(path: str | os.PathLike, output: str | os.PathLike | None = None) -> ScenarioPlan:
    """Read and check the scenario file at `path` (see `parse`); `output` is where `dst` files go
    (default: the scenario's folder, as scenario_runner without --output)."""
    path = Path(path)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"cannot read the scenario file: {exc.strerror or exc}", path=str(path)) from None
    return parse(loads(text, str(path)), path.parent, output, file=path)


def loads(text: bytes | str, where: str = "scenario") -> Any:
    """The decoded JSON of a scenario file's text; a ScenarioError at `where` if it is not JSON."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ScenarioError(f"not valid JSON: {exc}", path=where) from None
