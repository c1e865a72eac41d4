"""pyvgf.load() and Model.run() on small VGF objects built in memory: the scheduler's rules
(aliasing, explicit set indices, compute segments through Python stand-ins), input checks,
threads, and refusals. Real models from model-converter are in test_runtime_models.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyvgf
from pyvgf import HalError, ModelInputError, VGFFormatError
from pyvgf.format.model import (
    VGF,
    BindingSlot,
    Category,
    CodeType,
    DescriptorSetInfo,
    DescriptorType,
    Format,
    ModelSequence,
    Module,
    ModuleType,
    Resource,
    Segment,
)
from support.runtime import check_threads

SPIRV_HEADER = np.array([0x07230203, 0x00010600, 0, 1, 0], np.uint32)


# -- models built in memory: compute segments only -------------------------------------------


def _module(name: str) -> Module:
    return Module(ModuleType.COMPUTE, name, "main", CodeType.SPIRV, SPIRV_HEADER)


def _two_compute_segments(fmt: int = Format.R32_SFLOAT) -> VGF:
    """x (a storage buffer) -> 'double' -> MRT1 (buffer) aliasing MRT2 (tensor) -> 'plus_one' -> y.

    The first segment's only set has the explicit index 1, so set 0 of its layout is empty.
    """
    return VGF(
        modules=[_module("double"), _module("plus_one")],
        resources=[
            Resource(DescriptorType.STORAGE_BUFFER, fmt, Category.INPUT, [2, 4]),
            Resource(DescriptorType.STORAGE_BUFFER, fmt, Category.INTERMEDIATE, [2, 4], alias_group_id=7),
            Resource(DescriptorType.TENSOR_ARM, fmt, Category.INTERMEDIATE, [2, 4], alias_group_id=7),
            Resource(DescriptorType.TENSOR_ARM, fmt, Category.OUTPUT, [2, 4]),
        ],
        sequence=ModelSequence(
            segments=[
                Segment(ModuleType.COMPUTE, "first", 0,
                        [DescriptorSetInfo([BindingSlot(0, 0), BindingSlot(1, 1)], set_index=1)],
                        inputs=[BindingSlot(0, 0)], outputs=[BindingSlot(1, 1)], dispatch_shape=[1, 1, 1]),
                Segment(ModuleType.COMPUTE, "second", 1,
                        [DescriptorSetInfo([BindingSlot(0, 2), BindingSlot(1, 3)])],
                        inputs=[BindingSlot(2, 2)], outputs=[BindingSlot(3, 3)], dispatch_shape=[2, 1, 1]),
            ],
            inputs=[BindingSlot(0, 0)], outputs=[BindingSlot(3, 3)], input_names=["x"], output_names=["y"],
        ),
    )


def _shaders(dtype=np.float32):
    def double(resources, workgroups):
        resources[(1, 1)].view(dtype)[:] = 2 * resources[(1, 0)].view(dtype)  # buffers: raw bytes

    def plus_one(resources, workgroups):
        resources[(0, 1)][...] = resources[(0, 0)] + 1  # tensors: typed arrays

    return {"double": double, "plus_one": plus_one}


SHADERS = _shaders()


@pytest.fixture
def compute_model():
    with pyvgf.load(_two_compute_segments(), shaders=SHADERS) as model:
        yield model


def test_segments_pass_data_through_aliased_resources(compute_model):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    (y,) = compute_model.run([x])
    np.testing.assert_array_equal(y, 2 * x + 1)


def test_model_describes_its_interface(compute_model):
    assert [(i.name, i.shape, i.dtype, i.format) for i in compute_model.inputs] == \
        [("x", (2, 4), np.float32, Format.R32_SFLOAT)]
    assert [(o.name, o.shape) for o in compute_model.outputs] == [("y", (2, 4))]
    assert "2 segment(s)" in repr(compute_model)


def test_inputs_by_name_list_or_single_array(compute_model):
    x = np.ones((2, 4), np.float32)
    expected = compute_model.run([x])[0]
    np.testing.assert_array_equal(compute_model.run({"x": x})[0], expected)
    np.testing.assert_array_equal(compute_model.run(x)[0], expected)


@pytest.mark.parametrize("inputs, message", [
    ([np.zeros((2, 4))], r"input 'x': expected dtype float32, got float64"),
    ([np.zeros((4, 2), np.float32)], r"input 'x': expected shape \[2, 4\], got \[4, 2\]"),
    ({"y": np.zeros((2, 4), np.float32)}, r"expected \['x'\]; unknown \['y'\], missing \['x'\]"),
    ([np.zeros((2, 4), np.float32)] * 2, r"expected 1 inputs \(x\), got 2"),
    ("x", "must be a list or a dict"),
])
def test_wrong_inputs_say_expected_and_got(compute_model, inputs, message):
    with pytest.raises(ModelInputError, match=message):
        compute_model.run(inputs)


def test_run_never_modifies_inputs_and_returns_owned_outputs(compute_model):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    x.flags.writeable = False
    first = compute_model.run([x])[0]
    first_copy = first.copy()
    compute_model.run([x + 10])
    np.testing.assert_array_equal(first, first_copy)
    np.testing.assert_array_equal(x, np.arange(8, dtype=np.float32).reshape(2, 4))


def test_int64_inputs_narrowed_to_the_files_int32():
    with pyvgf.load(_two_compute_segments(Format.R32_SINT), shaders=_shaders(np.int32)) as model:
        assert model.inputs[0].dtype == np.int32
        x = np.arange(8, dtype=np.int64).reshape(2, 4)
        (y,) = model.run([x])
        assert y.dtype == np.int32 and x.dtype == np.int64
        np.testing.assert_array_equal(y, 2 * x + 1)
        with pytest.raises(ModelInputError, match="outside the int32 range"):
            model.run([x + 2**40])


def test_missing_shader_fails_at_load_naming_the_module():
    with pytest.raises(HalError, match=r"'double'.*register_shader.*backend='vulkan'"):
        pyvgf.load(_two_compute_segments())


def test_registered_shaders_are_used():
    for name, fn in SHADERS.items():
        pyvgf.register_shader(name, fn)
    try:
        with pyvgf.load(_two_compute_segments()) as model:
            np.testing.assert_array_equal(model.run([np.ones((2, 4), np.float32)])[0], np.full((2, 4), 3.0))
    finally:
        for name in SHADERS:
            pyvgf.unregister_shader(name)


def test_concurrent_runs_of_one_model_match_sequential_runs(compute_model):
    check_threads(compute_model, lambda rng: [rng.standard_normal((2, 4)).astype(np.float32)])


def test_sequential_runs_reuse_one_execution(compute_model):
    for _ in range(3):
        compute_model.run([np.ones((2, 4), np.float32)])
    assert len(compute_model._pool) == 1


def test_dynamic_shapes_are_refused():
    vgf = _two_compute_segments()
    vgf.resources[0].shape = [-1, 4]
    with pytest.raises(HalError, match=r"MRT entry 0 has a dynamic shape \[-1, 4\]"):
        pyvgf.load(vgf, shaders=SHADERS)


def test_bad_references_are_format_errors():
    vgf = _two_compute_segments()
    vgf.sequence.segments[1].set_infos[0].bindings[0].mrt_index = 9
    with pytest.raises(VGFFormatError, match="refers to resource 9, but there are 4"):
        pyvgf.load(vgf, shaders=SHADERS)
    vgf = _two_compute_segments()
    vgf.sequence.segments[0].module_index = 5
    with pytest.raises(VGFFormatError, match="refers to module 5"):
        pyvgf.load(vgf, shaders=SHADERS)


def test_closed_model_refuses_to_run(compute_model):
    compute_model.close()
    with pytest.raises(HalError):
        compute_model.run([np.ones((2, 4), np.float32)])


_DTYPES = [np.float32, np.float64, np.float16, np.int8, np.int32, np.int64, np.uint8, np.bool_, object]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.lists(st.integers(0, 5), max_size=4), dtype=st.sampled_from(_DTYPES),
       as_dict=st.booleans(), name=st.sampled_from(["x", "y"]))
def test_any_input_runs_or_raises_model_input_error(compute_model, shape, dtype, as_dict, name):
    value = np.zeros(shape, dtype)
    inputs = {name: value} if as_dict else [value]
    try:
        (y,) = compute_model.run(inputs)
    except ModelInputError:
        return
    assert value.shape == (2, 4) and value.dtype == np.float32 and (name == "x" or not as_dict)
    np.testing.assert_array_equal(y, np.ones((2, 4), np.float32))
