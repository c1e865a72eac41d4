"""Reference executors: Arm's own tools run a model so that pyvgf can be checked against them.

    tosa_reference(mlir_text, inputs)   TOSA MLIR through tosa_reference_model (op semantics)
    scenario_run(vgf_path, inputs)      the VGF on Vulkan: scenario_runner + the ML emulation layer
    vgf_io(vgf_path)                    a VGF's inputs and outputs (dtype, shape), from vgf_dump

tosa_reference keeps one child process for the reference model (restarted after a crash);
scenario_run starts a fresh scenario_runner process per call, so no Vulkan state leaks.
"""

from __future__ import annotations

import atexit
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np

from fixtures import tosa_from_mlir
from pyvgf.elements import BY_MLIR, raw_view
from pyvgf.format import Format, numpy_dtype
from pyvgf.hal.vulkan.layers import emulation_layer_env


class ReferenceError(RuntimeError):
    """A reference tool failed; the message carries its output."""


class ReferenceUnpredictable(ReferenceError):
    """tosa_reference_model ran the graph, but a REQUIRE of the specification failed: the
    specification leaves the result unpredictable, so there is nothing to compare with."""


# MLIR element type -> numpy dtype, for the types the reference model cannot hand numpy
# natively (it takes and gives bf16/fp8 as raw bytes).
_MAIN_RESULTS = re.compile(r"func\.func\s+@main\s*\((?:[^()]|\([^()]*\))*\)\s*->\s*(\([^)]*\)|[^{]+)")
_ELEMENT = re.compile(r"tensor<(?:[0-9?]+x)*([A-Za-z0-9]+)>")


def _result_dtypes(mlir_text: str) -> list[np.dtype]:
    match = _MAIN_RESULTS.search(mlir_text)
    if match is None:
        raise ReferenceError("the MLIR has no func.func @main with result types")
    return [BY_MLIR[name].dtype for name in _ELEMENT.findall(match.group(1))]


def _reference_worker(conn: Connection) -> None:
    """Child process loop: run flatbuffers in tosa_reference_model, which may crash the process
    (a failed REQUIRE can end in SIGFPE); the parent sees the crash as a closed pipe."""
    import tosa_reference_model

    valid = tosa_reference_model.GraphStatus.TOSA_VALID
    unpredictable = tosa_reference_model.GraphStatus.TOSA_UNPREDICTABLE
    while True:
        flatbuffer, inputs = conn.recv()
        try:
            outputs, status = tosa_reference_model.run(flatbuffer, inputs)
        except ValueError as exc:
            conn.send(("error", f"tosa_reference_model rejected the graph or inputs: {exc}"))
            continue
        if status == valid:
            conn.send(("ok", outputs))
        elif status == unpredictable:
            conn.send(("unpredictable", "result unpredictable (a REQUIRE failed)"))
        else:
            conn.send(("error", f"tosa_reference_model finished with status {status}"))


class _Worker:
    """One long-lived child process running tosa_reference_model, restarted after a crash."""

    def __init__(self) -> None:
        self._proc: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None

    def run(self, flatbuffer: bytes, inputs: list[np.ndarray]) -> tuple[str, object]:
        if self._proc is None or not self._proc.is_alive():
            parent, child = multiprocessing.get_context("fork").Pipe()
            self._proc = multiprocessing.get_context("fork").Process(
                target=_reference_worker, args=(child,), daemon=True)
            self._proc.start()
            child.close()
            self._conn = parent
        try:
            self._conn.send((flatbuffer, inputs))
            return self._conn.recv()
        except (EOFError, ConnectionError):
            self._proc.join()
            code = self._proc.exitcode
            self._proc = None
            return "crash", f"tosa_reference_model crashed (exit code {code})"

    def close(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join()
            self._proc = None


_WORKER = _Worker()
atexit.register(_WORKER.close)


def tosa_reference(mlir_text: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run TOSA MLIR (text with a `func.func @main`) in `tosa_reference_model`.

    `inputs` follow @main's argument order, each of the argument's dtype (bf16 and fp8 as
    ml_dtypes arrays, int48 as int64). Returns @main's results with their declared dtypes.
    Raises ReferenceUnpredictable when a REQUIRE of the specification fails for these input
    values, ReferenceError when the graph is rejected or the reference model crashes.
    The model runs in a child process, so that its crashes cannot take the caller down.
    """
    flatbuffer = tosa_from_mlir(mlir_text).read_bytes()
    raw_inputs = [raw_view(x) for x in inputs]
    kind, payload = _WORKER.run(flatbuffer, raw_inputs)
    if kind == "unpredictable":
        raise ReferenceUnpredictable(f"tosa_reference_model: {payload}")
    if kind != "ok":
        raise ReferenceError(str(payload))
    outputs = payload
    dtypes = _result_dtypes(mlir_text)
    if len(dtypes) != len(outputs):
        raise ReferenceError(f"@main declares {len(dtypes)} results, the model gave {len(outputs)}")
    return [out.view(dtype) if out.dtype != dtype else out for out, dtype in zip(outputs, dtypes)]


# -- scenario_runner ---------------------------------------------------------------------------

SCENARIO_TIMEOUT_S = 600


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ReferenceError(f"{name} not found on PATH: pip install -e '.[test]'")
    return path


def _run(cmd: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        cmd, check=False, capture_output=True, text=True, env=env, timeout=SCENARIO_TIMEOUT_S
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


def scenario_prepare(
    vgf_path: str | Path, inputs: list[np.ndarray], work: Path
) -> tuple[Path, list[tuple[Path, TensorSpec]]]:
    """Write the inputs and a filled-in scenario for `vgf_path` into folder `work`.

    Returns the scenario JSON and, for each output in model-sequence order, the .npy path that
    scenario_runner writes and its spec. Run it with `scenario_command(scenario_json, work)`.
    """
    vgf_path = Path(vgf_path).resolve()
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
    return scenario_json, [(paths[spec.path_marker], spec) for spec in out_specs]


def scenario_command(scenario_json: Path, work: Path, *extra: str) -> tuple[list[str], dict[str, str]]:
    """The scenario_runner command line and environment (emulation layer arranged) for a scenario."""
    cmd = [_tool("scenario_runner"), "--scenario", str(scenario_json), "--output", str(work), *extra]
    return cmd, {**os.environ, **emulation_layer_env()}


def scenario_outputs(outputs: list[tuple[Path, TensorSpec]]) -> list[np.ndarray]:
    """Read back what scenario_runner wrote, with the dtype and shape the VGF declares."""
    results = []
    for path, spec in outputs:
        array = np.load(path)
        if array.dtype != spec.dtype:
            if array.itemsize != spec.dtype.itemsize:
                raise ReferenceError(
                    f"output {spec.index}: scenario_runner wrote {array.dtype}, "
                    f"the VGF declares {spec.dtype}"
                )
            array = array.view(spec.dtype)
        results.append(array.reshape(spec.shape))
    return results


def scenario_run(vgf_path: str | Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run a VGF through `scenario_runner` on Vulkan with the ML emulation layer.

    `inputs` are given in the order of the VGF's model-sequence inputs (input_0, input_1, ...);
    each is cast to the dtype the VGF declares. Returns the outputs in model-sequence order, with
    the dtype and shape of the VGF's output tensors.
    """
    with tempfile.TemporaryDirectory(prefix="pyvgf-scenario-") as tmp:
        work = Path(tmp)
        scenario_json, outputs = scenario_prepare(vgf_path, inputs, work)
        _run(*scenario_command(scenario_json, work))
        return scenario_outputs(outputs)
