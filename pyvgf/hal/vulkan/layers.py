"""Arm's ML emulation layer: find it and arrange its layers so any loader stacks them right.

The emulation layer (pip package `ai-ml-emulation-layer-for-vulkan`, module `emulation_layer`)
implements VK_ARM_tensors (layer VK_LAYER_ML_Tensor_Emulation) and VK_ARM_data_graph
(VK_LAYER_ML_Graph_Emulation) on any Vulkan 1.3 driver. Its manifests name the layer libraries
by bare file name, which the loader looks up on the library search path, not beside the
manifest, so they are copied with `library_path` made absolute into a folder of pyvgf's own.
The Graph layer must sit above the Tensor layer: pyvgf names both in
`VkInstanceCreateInfo.ppEnabledLayerNames`, Graph first (nearest the application), an order
every loader honours (Debian 12's 1.3.239 loader ignores the order of VK_INSTANCE_LAYERS).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

GRAPH_LAYER = "VK_LAYER_ML_Graph_Emulation"
TENSOR_LAYER = "VK_LAYER_ML_Tensor_Emulation"
EMULATION_LAYERS = (GRAPH_LAYER, TENSOR_LAYER)
"""In ppEnabledLayerNames order: Graph above Tensor."""
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
    if not all((deploy / "share/vulkan/explicit_layer.d" / m).is_file() for m in _MANIFESTS.values()):
        return None
    try:
        from importlib.metadata import version

        ver = version("ai-ml-emulation-layer-for-vulkan")
    except Exception:  # noqa: BLE001 - the version is informational only
        ver = "unknown"
    return EmulationLayer(deploy, ver)


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pyvgf" / "vulkan-layers"


def manifest_folder(layer: EmulationLayer) -> Path:
    """A folder holding both emulation-layer manifests with absolute library paths.

    Written once per installed layer (keyed by its path and manifests), atomically, so that
    concurrent processes never see half a file. Falls back to a temporary folder when the
    user cache is not writable.
    """
    texts = {}
    for name in EMULATION_LAYERS:
        data = json.loads(layer.manifest(name).read_text())
        lib = Path(data["layer"]["library_path"])
        if not lib.is_absolute():
            lib = layer.deploy / "lib" / lib.name
        data["layer"]["library_path"] = str(lib)
        texts[_MANIFESTS[name]] = json.dumps(data, indent=2)
    key = hashlib.sha256(json.dumps(sorted(texts.items())).encode()).hexdigest()[:16]
    for root in (_cache_root(), Path(tempfile.gettempdir()) / f"pyvgf-{os.getuid()}"):
        folder = root / key
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for fname, text in texts.items():
                target = folder / fname
                if not target.exists() or target.read_text() != text:
                    tmp = folder / f".{fname}.{os.getpid()}"
                    tmp.write_text(text)
                    tmp.replace(target)
            return folder
        except OSError:
            continue
    raise OSError("no writable folder for the emulation layer manifests")


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
