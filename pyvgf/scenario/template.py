"""The scenario template of a VGF, as `vgf_dump --scenario-template` writes it (version 0.11).

One `dispatch_graph` of the whole model sequence: resource `vgf_graph_ref` (the VGF by file
name), a tensor or buffer per model input (`input_k_ref`, readonly, `src`) and output
(`output_k_ref`, writeonly, `dst`), bound at their binding slot's id in set 0, and one shader
resource per compute module (`shader_m_ref`, m its module index) substituted for it by name.
Placeholder paths count tensors and buffers apart, per direction: TEMPLATE_PATH_TENSOR_INPUT_0,
TEMPLATE_PATH_BUFFER_INPUT_0, TEMPLATE_PATH_TENSOR_OUTPUT_0, ... `write_template` also writes
what the placeholders name (zero-filled .npy data, the shader code) and the VGF beside the JSON,
so that the folder runs as it is.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ScenarioError
from ..format.model import VGF, Category, CodeType, DescriptorType, ModuleType, numpy_dtype
from ..vknames import FORMAT
from .parse import FORMATS

_BUFFERS = (DescriptorType.STORAGE_BUFFER, DescriptorType.UNIFORM_BUFFER)
_SHADER_TYPES = {CodeType.SPIRV: ("SPIR-V", "SPIRV"), CodeType.GLSL: ("GLSL", "GLSL"),
                 CodeType.HLSL: ("HLSL", "HLSL")}
_DYNAMIC = -(2**63)
"""How the VGF marks a dynamic dimension; the template writes -1."""


def template(vgf: VGF, vgf_name: str, *, boundaries: bool = False) -> dict[str, Any]:
    """The scenario template dict of `vgf` (its graph `src` is `vgf_name`). With `boundaries`,
    mark_boundary commands before and after the dispatch (`--scenario-template-add-boundaries`)."""
    seq = vgf.sequence
    bindings, resources = [], {"tensor": [], "buffer": []}
    outputs = []
    for direction, slots, category in (("input", seq.inputs, Category.INPUT), ("output", seq.outputs, Category.OUTPUT)):
        counts = {"tensor": 0, "buffer": 0}
        for i, slot in enumerate(slots):
            uid = f"{direction}_{i}_ref"
            bindings.append({"id": slot.binding, "resource_ref": uid, "set": 0})
            if not 0 <= slot.mrt_index < len(vgf.resources):
                raise ScenarioError(f"model {direction} {i} refers to MRT entry {slot.mrt_index}, but the table has "
                                    f"{len(vgf.resources)}", path="model_sequence")
            res = vgf.resources[slot.mrt_index]
            if res.category != category:
                raise ScenarioError(f"model {direction} {i} is MRT entry {slot.mrt_index}, a {res.category.name}",
                                    path="model_sequence")
            kind = "buffer" if res.descriptor_type in _BUFFERS else "tensor"
            if kind == "tensor" and res.descriptor_type != DescriptorType.TENSOR_ARM:
                raise ScenarioError(f"model {direction} {i} has descriptor type {res.descriptor_type}: a scenario "
                                    "holds tensors and buffers", path="model_sequence")
            marker = f"TEMPLATE_PATH_{kind.upper()}_{direction.upper()}_{counts[kind]}"
            counts[kind] += 1
            key, access = ("src", "readonly") if direction == "input" else ("dst", "writeonly")
            body: dict[str, Any] = {"uid": uid, key: marker, "shader_access": access}
            if kind == "tensor":
                body["format"] = FORMAT.get(res.format, f"VK_FORMAT_UNKNOWN_{res.format}")
                body["dims"] = [-1 if d == _DYNAMIC else int(d) for d in res.shape]
            else:
                if any(d <= 0 for d in res.shape):
                    raise ScenarioError(f"buffer {uid} has a non-positive dimension", path="model_resource_table")
                try:
                    itemsize = numpy_dtype(res.format).itemsize
                except ValueError:
                    raise ScenarioError(f"buffer {uid} has VkFormat {res.format}, which has no element size",
                                        path="model_resource_table") from None
                body["size"] = int(np.prod(res.shape, dtype=object)) * itemsize
            resources[kind].append({kind: body})
            if direction == "output":
                outputs.append(uid)
    substitutions, shaders = [], []
    for index, module in enumerate(vgf.modules):
        if module.type != ModuleType.COMPUTE:
            continue
        ref = f"shader_{index}_ref"
        substitutions.append({"shader_ref": ref, "target": module.name})
        kind, path_kind = _SHADER_TYPES.get(module.code_type, ("", ""))
        shaders.append({"shader": {"uid": ref, "src": f"TEMPLATE_PATH_SHADER_{path_kind}_{index}", "type": kind,
                                   "entry": module.entry_point}})
    commands: list[dict[str, Any]] = [{"dispatch_graph": {"bindings": bindings, "shader_substitutions": substitutions,
                                                          "graph_ref": "vgf_graph_ref"}}]
    if boundaries:
        commands = [{"mark_boundary": {"resources": []}}, *commands, {"mark_boundary": {"resources": outputs}}]
    graph = {"graph": {"uid": "vgf_graph_ref", "src": vgf_name}}
    return {"resources": [graph, *resources["tensor"], *resources["buffer"], *shaders], "commands": commands}


def dumps(scenario: dict[str, Any]) -> str:
    """The JSON text as vgf_dump writes it: sorted keys, four-space indent, no final newline."""
    return json.dumps(scenario, indent=4, sort_keys=True, ensure_ascii=False)


def write_template(vgf: VGF, vgf_path: str | os.PathLike, folder: str | os.PathLike, *,
                   boundaries: bool = False) -> Path:
    """Write FOLDER/<model>.json (the template) with a copy of the VGF and, under each placeholder
    name, what it stands for: zeros of each input's shape and dtype (as .npy data), each compute
    module's code. Returns the JSON path. Nothing in FOLDER but these files is touched."""
    vgf_path = Path(vgf_path)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    scenario = template(vgf, vgf_path.name, boundaries=boundaries)
    if (folder / vgf_path.name).resolve() != vgf_path.resolve():
        shutil.copyfile(vgf_path, folder / vgf_path.name)
    for entry in scenario["resources"]:
        ((kind, body),) = entry.items()
        if kind == "tensor" and "src" in body:
            dtype = numpy_dtype(FORMATS[body["format"]])
            dims = [max(d, 1) for d in body["dims"]]
            _save_npy(folder / body["src"], np.zeros(dims, dtype))
        elif kind == "buffer" and "src" in body:
            _save_npy(folder / body["src"], np.zeros(body["size"], np.int8))
        elif kind == "shader":
            module = vgf.modules[int(body["uid"].split("_")[1])]
            if isinstance(module.code, np.ndarray):
                (folder / body["src"]).write_bytes(np.asarray(module.code, "<u4").tobytes())
            elif isinstance(module.code, str):
                (folder / body["src"]).write_text(module.code)
    out = folder / (vgf_path.stem + ".json")
    out.write_text(dumps(scenario))
    return out



def _save_npy(path: Path, array: np.ndarray) -> None:
    """np.save without its `.npy` suffix rule: the file is named exactly `path`."""
    if array.dtype.kind == "V" or array.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        array = array.view(f"V{array.dtype.itemsize}")
    with open(path, "wb") as f:
        np.save(f, array, allow_pickle=False)
