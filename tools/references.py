"""Reference executors: Arm's own tools run a model so that pyvgf can be checked against them.

    scenario_run(vgf_path, inputs)   the VGF on Vulkan: scenario_runner + the ML emulation layer
    vgf_io(vgf_path)                 its inputs and outputs (dtype, shape), from vgf_dump

Each call runs the tool in a fresh process, so no state leaks from one model to the next.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pyvgf.format import Format, numpy_dtype
from pyvgf.hal.vulkan.layers import emulation_layer_env

SCENARIO_TIMEOUT_S = 600


class ReferenceError(RuntimeError):
    """A reference tool failed; the message carries its output."""


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ReferenceError(f"{name} not found on PATH: pip install -e '.[test]'")
    return path


def _run(cmd: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=env, timeout=SCENARIO_TIMEOUT_S
    )
    if proc.returncode != 0:
        raise ReferenceError(
            f"{' '.join(cmd)} exited with {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


def _tensor_dtype(vk_format: str) -> np.dtype:
    name = vk_format.removeprefix("VK_FORMAT_")
    try:
        return numpy_dtype(Format[name])
    except KeyError:
        raise ReferenceError(f"scenario template names an unknown format {vk_format}") from None


@dataclass(frozen=True)
class TensorSpec:
    """One tensor of a scenario template: where its data goes, its dtype and shape."""

    path_marker: str
    index: int
    dtype: np.dtype
    shape: tuple[int, ...]


def _template(vgf_path: Path, work: Path) -> dict:
    template = work / "template.json"
    _run([_tool("vgf_dump"), "-i", str(vgf_path), "--scenario-template", "-o", str(template)])
    return json.loads(template.read_text())


def _specs(scenario: dict) -> tuple[list[TensorSpec], list[TensorSpec]]:
    inputs, outputs = [], []
    for resource in scenario["resources"]:
        tensor = resource.get("tensor")
        if tensor is None:
            continue
        for key, prefix, found in (
            ("src", "TEMPLATE_PATH_TENSOR_INPUT_", inputs),
            ("dst", "TEMPLATE_PATH_TENSOR_OUTPUT_", outputs),
        ):
            marker = tensor.get(key, "")
            if marker.startswith(prefix):
                found.append(
                    TensorSpec(
                        marker,
                        int(marker[len(prefix):]),
                        _tensor_dtype(tensor["format"]),
                        tuple(tensor["dims"]),
                    )
                )
    return sorted(inputs, key=lambda t: t.index), sorted(outputs, key=lambda t: t.index)


def vgf_io(vgf_path: str | Path) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """The model inputs and outputs of a VGF (dtype and shape), as vgf_dump's template has them."""
    with tempfile.TemporaryDirectory(prefix="pyvgf-scenario-") as tmp:
        return _specs(_template(Path(vgf_path).resolve(), Path(tmp)))


def scenario_run(vgf_path: str | Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run a VGF through `scenario_runner` on Vulkan with the ML emulation layer.

    `inputs` are given in the order of the VGF's model-sequence inputs (input_0, input_1, ...);
    each is cast to the dtype the VGF declares. Returns the outputs in model-sequence order, with
    the dtype and shape of the VGF's output tensors.
    """
    vgf_path = Path(vgf_path).resolve()
    with tempfile.TemporaryDirectory(prefix="pyvgf-scenario-") as tmp:
        work = Path(tmp)
        scenario = _template(vgf_path, work)
        in_specs, out_specs = _specs(scenario)
        if len(in_specs) != len(inputs):
            raise ReferenceError(f"{vgf_path.name} takes {len(in_specs)} inputs, {len(inputs)} given")
        paths = {}
        for spec, value in zip(in_specs, inputs):
            array = np.asarray(value)
            if array.shape != spec.shape and array.size != int(np.prod(spec.shape)):
                raise ReferenceError(
                    f"input {spec.index}: {array.shape} given, the VGF declares {list(spec.shape)}"
                )
            path = paths[spec.path_marker] = work / f"input_{spec.index}.npy"
            np.save(path, np.ascontiguousarray(array.astype(spec.dtype, copy=False)).reshape(spec.shape))
        for spec in out_specs:
            paths[spec.path_marker] = work / f"output_{spec.index}.npy"
        for resource in scenario["resources"]:
            if "graph" in resource:
                resource["graph"]["src"] = str(vgf_path)
            tensor = resource.get("tensor", {})
            for key in ("src", "dst"):
                if tensor.get(key) in paths:
                    tensor[key] = str(paths[tensor[key]])
        for command in scenario["commands"]:
            for body in command.values():
                if isinstance(body, dict):
                    body.pop("shader_substitutions", None)
        scenario_json = work / "scenario.json"
        scenario_json.write_text(json.dumps(scenario, indent=1))
        env = {**os.environ, **emulation_layer_env()}
        _run(
            [_tool("scenario_runner"), "--scenario", str(scenario_json), "--output", str(work)],
            env=env,
        )
        results = []
        for spec in out_specs:
            array = np.load(paths[spec.path_marker])
            if array.dtype != spec.dtype:
                if array.itemsize != spec.dtype.itemsize:
                    raise ReferenceError(
                        f"output {spec.index}: scenario_runner wrote {array.dtype}, "
                        f"the VGF declares {spec.dtype}"
                    )
                array = array.view(spec.dtype)
            results.append(array.reshape(spec.shape))
        return results
