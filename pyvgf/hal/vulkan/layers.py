"""Arrange Arm's ML emulation layer so that any Vulkan 1.3 driver runs graph pipelines.

The `ai-ml-emulation-layer-for-vulkan` wheel ships two explicit layers: VK_LAYER_ML_Graph_Emulation
(VK_ARM_data_graph) must sit above VK_LAYER_ML_Tensor_Emulation (VK_ARM_tensors), because the
graph layer asks the layer below it for VK_ARM_tensors. Older Vulkan loaders (Debian 12's 1.3.239)
ignore the order given in VK_INSTANCE_LAYERS and stack explicit layers in the order their manifests
are found. With both manifests in the wheel's one folder the tensor layer lands on top and device
creation fails. `emulation_layer_env()` therefore copies each manifest into a folder of its own,
with an absolute `library_path`, and lists the graph folder first in VK_LAYER_PATH: that order
works with old and new loaders alike.

This module only prepares files and environment variables; it never imports `vulkan`. The
variables must be in the environment before the Vulkan loader creates an instance (for a child
process: pass them in its env; in-process: set `os.environ` before the first vkCreateInstance).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import tempfile
from pathlib import Path

from ...errors import HalError

GRAPH_LAYER = "VK_LAYER_ML_Graph_Emulation"
TENSOR_LAYER = "VK_LAYER_ML_Tensor_Emulation"
LAYERS = (GRAPH_LAYER, TENSOR_LAYER)
"""Instance layer names, outermost (nearest the application) first."""

_MANIFESTS = {GRAPH_LAYER: "VkLayer_Graph", TENSOR_LAYER: "VkLayer_Tensor"}
_LIBRARY_PATH = re.compile(r'("library_path"\s*:\s*")([^"]*)(")')


def emulation_layer_root() -> Path:
    """The `deploy` folder of the installed emulation_layer package (lib/ and share/ inside).

    Raises HalError when the package is not installed or lacks its layers.
    """
    spec = importlib.util.find_spec("emulation_layer")
    if spec is None or not spec.submodule_search_locations:
        raise HalError(
            "the ML emulation layer is not installed: pip install ai-ml-emulation-layer-for-vulkan"
        )
    root = Path(next(iter(spec.submodule_search_locations))) / "deploy"
    for stem in _MANIFESTS.values():
        for path in (_manifest(root, stem), root / "lib" / f"lib{stem}.so"):
            if not path.is_file():
                raise HalError(f"emulation layer package is incomplete: {path} is missing")
    return root


def _manifest(root: Path, stem: str) -> Path:
    return root / "share" / "vulkan" / "explicit_layer.d" / f"{stem}.json"


def layer_manifest_dirs(dest: Path | None = None) -> list[Path]:
    """Write one manifest folder per layer (absolute library paths) and return them, graph first.

    `dest` defaults to a per-user folder under the system temp dir, keyed by the installed
    package's location and manifest contents, so repeated calls reuse the same files.
    """
    root = emulation_layer_root()
    texts = {stem: _manifest(root, stem).read_text() for stem in _MANIFESTS.values()}
    if dest is None:
        key = hashlib.sha256(repr((str(root), sorted(texts.items()))).encode()).hexdigest()[:16]
        dest = Path(tempfile.gettempdir()) / f"pyvgf-vk-layers-{os.getuid()}" / key
    dirs = []
    for stem in _MANIFESTS.values():
        folder = dest / stem
        library = str(root / "lib" / f"lib{stem}.so")
        text, count = _LIBRARY_PATH.subn(lambda m: m[1] + library + m[3], texts[stem])
        if count != 1:
            raise HalError(f"{_manifest(root, stem)} has {count} library_path entries, expected 1")
        target = folder / f"{stem}.json"
        if not target.is_file() or target.read_text() != text:
            folder.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
            tmp.write_text(text)
            tmp.replace(target)
        dirs.append(folder)
    return dirs


def emulation_layer_env(dest: Path | None = None) -> dict[str, str]:
    """The environment variables that enable the emulation layers in the right order.

    Returns VK_LAYER_PATH (graph folder first), VK_INSTANCE_LAYERS (graph first) and, when the
    caller's environment lacks it, XDG_RUNTIME_DIR (the loader warns without one). Merge the
    result into the environment of the process that creates the Vulkan instance.
    """
    env = {
        "VK_LAYER_PATH": os.pathsep.join(str(d) for d in layer_manifest_dirs(dest)),
        "VK_INSTANCE_LAYERS": os.pathsep.join(LAYERS),
    }
    if not os.environ.get("XDG_RUNTIME_DIR"):
        env["XDG_RUNTIME_DIR"] = tempfile.gettempdir()
    return env
