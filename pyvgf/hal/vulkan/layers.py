"""Arm's ML emulation layer: find it and arrange its layers so that any loader stacks them right.

The emulation layer (pip package `ai-ml-emulation-layer-for-vulkan`, module `emulation_layer`)
implements VK_ARM_tensors (layer VK_LAYER_ML_Tensor_Emulation) and VK_ARM_data_graph
(VK_LAYER_ML_Graph_Emulation) on any Vulkan 1.3 driver. The Graph layer must sit above the
Tensor layer, because it asks the layer below it for VK_ARM_tensors.

Two traps, both handled here:
  * The manifests name their libraries by bare file name, which the loader looks up on the
    library search path, not beside the manifest: pyvgf writes copies with `library_path` made
    absolute.
  * Debian 12's loader (1.3.239) ignores the order of VK_INSTANCE_LAYERS and stacks explicit
    layers in the order their manifests are found. Each manifest therefore gets a folder of its
    own, the Graph folder listed first. In-process, pyvgf also names the layers in
    `ppEnabledLayerNames`, Graph first, an order every loader honours.

This module only prepares files and environment variables; it never imports `vulkan`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ...errors import HalError

GRAPH_LAYER = "VK_LAYER_ML_Graph_Emulation"
TENSOR_LAYER = "VK_LAYER_ML_Tensor_Emulation"
EMULATION_LAYERS = (GRAPH_LAYER, TENSOR_LAYER)
"""Outermost (nearest the application) first: Graph above Tensor."""
VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation"

_MANIFESTS = {GRAPH_LAYER: "VkLayer_Graph.json", TENSOR_LAYER: "VkLayer_Tensor.json"}


@dataclass(frozen=True)
class EmulationLayer:
    """An installed copy of Arm's emulation layer."""

    deploy: Path
    """The package's deploy/ folder (lib/ and share/vulkan/explicit_layer.d/)."""
    version: str

    def manifest(self, layer: str) -> Path:
        return self.deploy / "share" / "vulkan" / "explicit_layer.d" / _MANIFESTS[layer]


@functools.cache
def find_emulation_layer() -> EmulationLayer | None:
    """The emulation layer installed with pip, or None."""
    try:
        import emulation_layer
    except ImportError:
        return None
    deploy = Path(emulation_layer.__file__).resolve().parent / "deploy"
    layer = EmulationLayer(deploy, _version())
    if not all(layer.manifest(name).is_file() for name in EMULATION_LAYERS):
        return None
    return layer


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ai-ml-emulation-layer-for-vulkan")
    except PackageNotFoundError:
        return "unknown"


def _cache_roots() -> list[Path]:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return [Path(base) / "pyvgf" / "vulkan-layers", Path(tempfile.gettempdir()) / f"pyvgf-{os.getuid()}"]


def manifest_folders(layer: EmulationLayer, dest: Path | None = None) -> list[Path]:
    """One folder per emulation layer manifest, with absolute library paths, Graph first.

    Written once per installed layer (keyed by the manifests' contents), atomically, so that
    concurrent processes never see half a file. Without `dest`, the user cache is used, or a
    temporary folder when the cache is not writable.
    """
    texts = {}
    for name in EMULATION_LAYERS:
        data = json.loads(layer.manifest(name).read_text())
        lib = Path(data["layer"]["library_path"])
        if not lib.is_absolute():
            lib = layer.deploy / "lib" / lib.name
        data["layer"]["library_path"] = str(lib)
        texts[name] = json.dumps(data, indent=2)
    key = hashlib.sha256(json.dumps(sorted(texts.items())).encode()).hexdigest()[:16]
    for root in [dest] if dest is not None else _cache_roots():
        try:
            return [_write(root / key / name, _MANIFESTS[name], texts[name]) for name in EMULATION_LAYERS]
        except OSError:
            continue
    raise HalError("no writable folder for the emulation layer manifests")


def _write(folder: Path, fname: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / fname
    if not target.exists() or target.read_text() != text:
        tmp = folder / f".{fname}.{os.getpid()}"
        tmp.write_text(text)
        tmp.replace(target)
    return folder


@contextmanager
def layer_search_path(folders: list[Path]) -> Iterator[None]:
    """Add `folders` to the loader's layer search (VK_ADD_LAYER_PATH) for the duration of
    instance creation, then restore the environment as it was."""
    old = os.environ.get("VK_ADD_LAYER_PATH")
    parts = [str(f) for f in folders] + ([old] if old else [])
    os.environ["VK_ADD_LAYER_PATH"] = os.pathsep.join(parts)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("VK_ADD_LAYER_PATH", None)
        else:
            os.environ["VK_ADD_LAYER_PATH"] = old


@contextmanager
def without_environment_layers() -> Iterator[None]:
    """Hide VK_INSTANCE_LAYERS and VK_LOADER_LAYERS_ENABLE from the loader for the duration
    (to see what a driver has by itself), then restore them."""
    names = ("VK_INSTANCE_LAYERS", "VK_LOADER_LAYERS_ENABLE")
    saved = {name: os.environ.pop(name) for name in names if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def emulation_layer_env(dest: Path | None = None) -> dict[str, str]:
    """Environment variables that enable the emulation layers, in the right order, in a child
    process (scenario_runner, say): VK_LAYER_PATH (Graph folder first), VK_INSTANCE_LAYERS and,
    when the caller's environment lacks it, XDG_RUNTIME_DIR (the loader warns without one).

    Raises HalError when the emulation layer is not installed.
    """
    layer = find_emulation_layer()
    if layer is None:
        raise HalError("the ML emulation layer is not installed: pip install ai-ml-emulation-layer-for-vulkan")
    env = {
        "VK_LAYER_PATH": os.pathsep.join(map(str, manifest_folders(layer, dest))),
        "VK_INSTANCE_LAYERS": os.pathsep.join(EMULATION_LAYERS),
    }
    if not os.environ.get("XDG_RUNTIME_DIR"):
        env["XDG_RUNTIME_DIR"] = tempfile.gettempdir()
    return env
