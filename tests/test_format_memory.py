"""Reading is zero-copy for constants and bounded for hostile shared references."""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pytest

from pyvgf.errors import VGFFormatError
from pyvgf.format import (
    VGF,
    Category,
    Constant,
    DescriptorType,
    Format,
    Header,
    ModelSequence,
    Resource,
    read,
    schema,
    write,
)
from pyvgf.format.flatbuffers import Builder, u32

BIG = 64 * 2**20


def _big_model() -> VGF:
    data = np.arange(BIG // 4, dtype=np.float32)
    resource = Resource(int(DescriptorType.NONE), int(Format.R32_SFLOAT), Category.CONSTANT, [BIG // 4])
    return VGF(Header(), [], ModelSequence(), [resource], [Constant(0, data.view(np.uint8))])


def _read_peak(path, **options) -> tuple[int, np.ndarray]:
    tracemalloc.start()
    try:
        vgf = read(path, **options)
        weights = vgf.constant_array(0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, weights


def test_reading_a_file_copies_it_once(tmp_path):
    """By default the file is read into memory once; its constants are views of that copy."""
    path = tmp_path / "big.vgf"
    path.write_bytes(write(_big_model()))
    peak, weights = _read_peak(path)
    size = path.stat().st_size
    assert size <= peak < size + 2**20, f"read() allocated {peak} bytes for a {size}-byte file"
    assert weights[-1] == BIG // 4 - 1 and not weights.flags.writeable


def test_reading_with_mmap_copies_no_constant(tmp_path):
    path = tmp_path / "big.vgf"
    path.write_bytes(write(_big_model()))
    peak, weights = _read_peak(path, mmap=True)
    assert peak < 2**20, f"read(mmap=True) allocated {peak} bytes for a {BIG}-byte constant"
    assert weights[-1] == BIG // 4 - 1 and not weights.flags.writeable


def test_a_file_changed_after_read_changes_nothing(tmp_path, vgf_model):
    """Truncated, rewritten or deleted after read(): the VGF keeps what it read (no SIGBUS)."""
    path = tmp_path / "model.vgf"
    path.write_bytes(write(_big_model()))
    vgf = read(path)
    before = vgf.constant_array(0).copy()
    with open(path, "r+b") as f:
        f.truncate(4096)
    assert np.array_equal(vgf.constant_array(0), before)
    path.write_bytes(vgf_model("format_one_op").read_bytes())
    path.unlink()
    assert np.array_equal(vgf.constant_array(0), before)


def test_a_mutable_buffer_is_copied():
    data = bytearray(write(_big_model()))
    vgf = read(data)
    before = vgf.constant_array(0).copy()
    data[-4 * 1000 :] = bytes(4000)
    assert np.array_equal(vgf.constant_array(0), before)


def _with_sequence_section(base: bytes, section: bytes) -> bytes:
    """`base` with its model sequence table replaced by `section`, appended at the end."""
    header = schema.Header.parse(base)
    offset = len(base) + (-len(base) % 8)
    header.sections[1].offset, header.sections[1].size = offset, len(section)
    return schema.Header.build(header) + base[schema.HEADER_SIZE:] + bytes(offset - len(base)) + section


def test_shared_reference_blow_up_is_refused_fast(vgf_model):
    b = Builder()
    big = b.create_scalar_vector(u32, np.zeros(50_000, dtype=np.uint32))
    segment = schema.SegmentInfo.build_into(b, dispatch_shape=big)
    root = schema.ModelSequenceTable.build_into(b, segments=b.create_offset_vector([segment] * 20_000))
    data = _with_sequence_section(vgf_model("format_one_op").read_bytes(), b.finish(root))
    start = time.perf_counter()
    with pytest.raises(VGFFormatError) as info:
        read(data)
    assert time.perf_counter() - start < 2
    assert info.value.section == "model sequence table"
    assert "referenced too often" in str(info.value)


def test_a_file_over_the_memory_budget_is_refused_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "big.vgf"
    with open(path, "wb") as f:
        f.truncate(1 << 40)  # sparse: 1 TiB that takes no disk
    with pytest.raises(VGFFormatError, match="over the memory budget"):
        read(path)
    monkeypatch.setenv("PYVGF_MEMORY_BUDGET", str(1 << 20))
    small = tmp_path / "model.vgf"
    small.write_bytes(write(_big_model()))
    with pytest.raises(VGFFormatError, match="mmap=True"):
        read(small)
    assert read(small, mmap=True).constant_array(0)[-1] == BIG // 4 - 1
