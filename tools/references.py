"""Reference executors: Arm's own tools run a model so that pyvgf can be checked against them.

    scenario_run(vgf_path, inputs)   the VGF on Vulkan: scenario_runner + the ML emulation layer

Each call runs the tool in a fresh process, so no state leaks from one model to the next.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
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


def scenario_run(vgf_path: str | Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run a VGF through `scenario_runner` on Vulkan with the ML emulation layer.

    `inputs` are given in the order of the VGF's model-sequence inputs (input_0, input_1, ...);
    each is cast to the dtype the VGF declares. Returns the outputs in model-sequence order, with
    the dtype and shape of the VGF's output tensors.
    """
    vgf_path = Path(vgf_path).resolve()
    with tempfile.TemporaryDirectory(prefix="pyvgf-scenario-") as tmp:
        work = Path(tmp)
        template = work / "template.json"
        _run([_tool("vgf_dump"), "-i", str(vgf_path), "--scenario-template", "-o", str(template)])
        scenario = json.loads(template.read_text())
        outputs: list[tuple[int, Path, np.dtype, tuple[int, ...]]] = []
        n_inputs = 0
        for resource in scenario["resources"]:
            if "graph" in resource:
                resource["graph"]["src"] = str(vgf_path)
            tensor = resource.get("tensor")
            if tensor is None:
                continue
            dtype = _tensor_dtype(tensor["format"])
            shape = tuple(tensor["dims"])
            src = tensor.get("src", "")
            dst = tensor.get("dst", "")
            if src.startswith("TEMPLATE_PATH_TENSOR_INPUT_"):
                k = int(src.rsplit("_", 1)[1])
                if k >= len(inputs):
                    raise ReferenceError(f"{vgf_path.name} has input {k}, {len(inputs)} given")
                array = np.asarray(inputs[k])
                if array.size != int(np.prod(shape)):
                    raise ReferenceError(
                        f"input {k}: {array.shape} given, the VGF declares {list(shape)}"
                    )
                path = work / f"input_{k}.npy"
                np.save(path, np.ascontiguousarray(array.astype(dtype, copy=False)).reshape(shape))
                tensor["src"] = str(path)
                n_inputs += 1
            if dst.startswith("TEMPLATE_PATH_TENSOR_OUTPUT_"):
                k = int(dst.rsplit("_", 1)[1])
                path = work / f"output_{k}.npy"
                tensor["dst"] = str(path)
                outputs.append((k, path, dtype, shape))
        if n_inputs != len(inputs):
            raise ReferenceError(f"{vgf_path.name} takes {n_inputs} inputs, {len(inputs)} given")
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
        for _k, path, dtype, shape in sorted(outputs, key=lambda o: o[0]):
            array = np.load(path)
            if array.dtype != dtype:
                array = array.view(dtype) if array.itemsize == dtype.itemsize else array.astype(dtype)
            results.append(array.reshape(shape))
        return results
