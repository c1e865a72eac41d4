"""The one element-type table (pyvgf.elements) and the generated Vulkan enum names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pyvgf import elements
from pyvgf.elements import BY_TOSA, TABLE, by_dtype, by_format, by_spirv, format_carries
from pyvgf.format import Format, numpy_dtype

ROOT = Path(__file__).resolve().parents[1]


def test_vknames_is_generated_from_the_installed_registry():
    pytest.importorskip("vulkan_object")
    import gen_vknames  # tools/gen_vknames.py
    assert (ROOT / "pyvgf" / "vknames.py").read_text() == gen_vknames.source(), (
        "pyvgf/vknames.py is stale: run python tools/gen_vknames.py"
    )


@pytest.mark.parametrize("row", TABLE, ids=lambda r: r.tosa)
def test_each_row_agrees_with_itself(row):
    assert row.dtype.itemsize == row.size
    for name in row.formats:
        assert f"VK_FORMAT_{name}" == elements.vknames.FORMAT[Format[name]]
    if row.tosa != "INT48":  # int48 shares int64's dtype, format and SPIR-V type
        assert by_dtype(row.dtype) is row
        assert by_format(row.vk_format) is row
        assert numpy_dtype(row.vk_format) == row.dtype
    if not row.tosa.startswith(("UINT", "INT48")):
        assert by_spirv(row.spirv.kind, row.spirv.width, row.spirv.encoding_value) is row


def test_the_table_leaves_ml_dtypes_unimported_until_asked():
    code = ("import sys, pyvgf; before = 'ml_dtypes' in sys.modules; import pyvgf.elements as e; "
            "e.by_format(e.FORMAT_VALUES['R32_SFLOAT']).dtype; e.by_dtype('int8'); "
            "print(before, 'ml_dtypes' in sys.modules, e.BY_TOSA['BF16'].dtype)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    before, after, bf16 = out.stdout.split()
    assert bf16 == "bfloat16"
    if before == "True":
        pytest.skip("importing pyvgf itself loads ml_dtypes")
    assert after == "False"


@pytest.mark.parametrize(("fmt", "dtype", "carries"), [
    ("R8_SINT", np.int8, True),
    ("R8_UINT", np.int8, True),  # RESCALE's input_unsigned / output_unsigned, as model-converter writes it
    ("R16_UINT", np.int16, True),
    ("R16_SINT", np.uint16, True),
    ("R32_UINT", np.int32, True),
    ("R16_UINT", np.int8, False),  # widths differ
    ("R16_SFLOAT", np.int16, False),  # a float format never carries integers
    ("R32_SINT", np.float32, False),
    ("R8_BOOL_ARM", np.int8, False),
    ("R8_UINT", np.bool_, False),
    ("R16_SFLOAT_FPENCODING_BFLOAT16_ARM", np.float16, False),
    ("R16_SFLOAT", "bfloat16", False),
])
def test_format_carries_follows_the_rule(fmt, dtype, carries):
    if dtype == "bfloat16":
        dtype = BY_TOSA["BF16"].dtype
    assert format_carries(Format[fmt], np.dtype(dtype)) is carries


def test_unknown_lookups_raise_key_error():
    with pytest.raises(KeyError):
        by_format(9)  # R8_UNORM: no element type
    with pytest.raises(KeyError):
        by_dtype(np.complex64)
    assert not format_carries(12345, np.dtype(np.int8))


def test_canonical_bools_are_zero_or_one_bytes():
    raw = np.array([255, 0, 1, 7], np.uint8).view(np.bool_)
    fixed = elements.canonical(raw)
    assert fixed.view(np.uint8).tolist() == [1, 0, 1, 1]
    ints = np.arange(3, dtype=np.int8)
    assert elements.canonical(ints) is ints
