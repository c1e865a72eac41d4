"""tools/references.py's scenario_run and pyvgf.hal.vulkan.layers: Arm's Vulkan oracle works."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import references  # tools/references.py
from pyvgf.errors import HalError
from pyvgf.hal.vulkan import layers


def test_layers_are_arranged_graph_first(tmp_path) -> None:
    env = layers.emulation_layer_env(tmp_path)
    graph_dir, tensor_dir = env["VK_LAYER_PATH"].split(":")
    assert env["VK_INSTANCE_LAYERS"] == f"{layers.GRAPH_LAYER}:{layers.TENSOR_LAYER}"
    for folder, name in ((graph_dir, layers.GRAPH_LAYER), (tensor_dir, layers.TENSOR_LAYER)):
        (manifest,) = list((tmp_path / folder).glob("*.json"))
        layer = json.loads(manifest.read_text())["layer"]
        assert layer["name"] == name
        assert layer["library_path"].startswith("/") and layer["library_path"].endswith(".so")


def test_layers_module_does_not_import_vulkan() -> None:
    import subprocess

    code = "import sys, pyvgf.hal.vulkan.layers as l; l.emulation_layer_env(); print('vulkan' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_missing_emulation_layer_is_a_hal_error(monkeypatch) -> None:
    monkeypatch.setattr(layers, "find_emulation_layer", lambda: None)
    with pytest.raises(HalError, match="not installed"):
        layers.emulation_layer_env()


@pytest.mark.vulkan
def test_scenario_run_adds(vgf_model) -> None:
    vgf = vgf_model("add_f32")
    rng = np.random.default_rng(7)
    a, b = (rng.standard_normal((1, 4, 4, 8)).astype(np.float32) for _ in range(2))
    (out,) = references.scenario_run(vgf, [a, b])
    assert out.dtype == np.float32 and out.shape == (1, 4, 4, 8)
    np.testing.assert_array_equal(out, a + b)


def test_scenario_run_rejects_wrong_input_count(vgf_model) -> None:
    with pytest.raises(references.ReferenceError, match="takes 2 inputs"):
        references.scenario_run(vgf_model("add_f32"), [np.zeros((1, 4, 4, 8), np.float32)])
