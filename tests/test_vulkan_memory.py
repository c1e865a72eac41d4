"""Memory placement on the vulkan backend: which memory type each use gets, from synthetic
memory-type lists of real device kinds, and the discrete-GPU path (device-local resources with
staging copies) run on lavapipe by forcing it, with the same results as the direct path."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pytest

import fixtures  # tools/fixtures.py
import pyvgf
from pyvgf.hal.vulkan.backend import VulkanDevice
from pyvgf.hal.vulkan.instance import DEVICE_LOCAL as DL
from pyvgf.hal.vulkan.instance import HOST_CACHED as CA
from pyvgf.hal.vulkan.instance import HOST_COHERENT as CO
from pyvgf.hal.vulkan.instance import HOST_VISIBLE as HV
from pyvgf.hal.vulkan.instance import is_unified_memory, rank_memory_types

ALL = 0xFFFF
DISCRETE = [(0, 1), (DL, 0), (HV | CO, 1), (HV | CO | CA, 1), (DL | HV | CO, 0)]
"""An NVIDIA discrete GPU with resizable BAR (the H200's shape): system, VRAM, system
write-combined, system cached, VRAM through the BAR (write-combined)."""
DISCRETE_NO_CACHED = [(DL, 0), (HV | CO, 1), (DL | HV | CO, 2)]
LAVAPIPE = [(DL | HV | CO | CA, 0)]
INTEGRATED = [(DL, 0), (DL | HV | CO, 0), (DL | HV | CO | CA, 0)]


def test_discrete_gpu_resources_go_to_vram_outside_the_bar():
    assert rank_memory_types(DISCRETE, ALL, host_visible=False)[:2] == [1, 4]


def test_discrete_gpu_host_memory_is_cached_system_memory():
    assert rank_memory_types(DISCRETE, ALL, host_visible=True) == [3, 2, 4]


def test_unified_memory_host_memory_is_cached_device_local():
    assert rank_memory_types(INTEGRATED, ALL, host_visible=True) == [2, 1]


def test_host_memory_falls_back_to_coherent_when_nothing_is_cached():
    assert rank_memory_types(DISCRETE_NO_CACHED, ALL, host_visible=True) == [1, 2]


def test_type_bits_exclude_types():
    assert rank_memory_types(DISCRETE, 1 << 3 | 1 << 4, host_visible=True) == [3, 4]
    assert rank_memory_types(DISCRETE, 1 << 0, host_visible=True) == []


@pytest.mark.parametrize("types, unified", [(DISCRETE, False), (DISCRETE_NO_CACHED, False),
                                            (LAVAPIPE, True), (INTEGRATED, True)])
def test_unified_memory_is_told_from_discrete(types, unified):
    assert is_unified_memory(types, ALL) is unified


@pytest.fixture
def staged(monkeypatch):
    """Vulkan devices behave as on a discrete GPU: device-local resources, staged transfers."""
    monkeypatch.setattr(VulkanDevice, "prefers_device_local", property(lambda self: True))


def _random_inputs(model, seed):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(i.shape) * 50).astype(i.dtype) if i.live else np.zeros(4, np.int32)
            for i in model.inputs]


def _outputs(source, monkeypatch, device_local, runs=2):
    monkeypatch.setattr(VulkanDevice, "prefers_device_local", property(lambda self: device_local))
    with pyvgf.load(source, backend="vulkan") as model:
        return [model.run(_random_inputs(model, 3 + n)) for n in range(runs)]


@pytest.mark.vulkan
@pytest.mark.parametrize("name", ["runtime_multi_io", "runtime_int8", "runtime_segments", "runtime_constants"])
def test_staged_runs_equal_direct_runs(name, monkeypatch):
    source = fixtures.model(name)
    direct = _outputs(source, monkeypatch, False)
    staged = _outputs(source, monkeypatch, True)
    for want_run, got_run in zip(direct, staged):
        for want, got in zip(want_run, got_run):
            np.testing.assert_array_equal(got, want)


@pytest.mark.vulkan
def test_staged_model_keeps_resources_unmapped(staged):
    source = (resources.files("pyvgf") / "examples" / "tiny_convnet.vgf").read_bytes()
    with pyvgf.load(source, backend="vulkan") as model:
        execution = model._pool[0]
        assert not any(r.mapped for r in execution.resources.values())
        assert all(h.mapped for h in execution.host.values())
        model.run(_random_inputs(model, 1))


@pytest.mark.vulkan
def test_queue_transfers_reach_device_local_tensors_and_buffers(staged):
    from pyvgf import hal

    adapter = hal.request_adapter("vulkan")
    device = adapter.request_device()
    try:
        data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
        tensor = device.create_tensor(pyvgf.format.Format.R32_SFLOAT, data.shape, device_local=True)
        device.queue.write_tensor(tensor, data)
        np.testing.assert_array_equal(device.queue.read_tensor(tensor), data)
        buffer = device.create_buffer(64, device_local=True)
        device.queue.write_buffer(buffer, np.arange(16, dtype=np.uint8), offset=8)
        assert device.queue.read_buffer(buffer, 8, 16).tolist() == list(range(16))
    finally:
        device.destroy()
        adapter.destroy()
