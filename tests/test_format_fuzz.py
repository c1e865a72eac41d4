"""Mutation fuzzing of real files: only VGFFormatError may escape, and every case is fast."""

from __future__ import annotations

import random
import struct
import time

import pytest

from pyvgf.errors import VGFFormatError
from pyvgf.format import read

SLOW_CASE_S = 2.0


def mutate(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    kind = rng.randrange(5)
    if kind == 0:
        for _ in range(rng.randrange(1, 8)):
            i = rng.randrange(len(out))
            out[i] ^= 1 << rng.randrange(8)
    elif kind == 1:
        out = out[: rng.randrange(len(out))]
    elif kind == 2:
        for _ in range(rng.randrange(1, 4)):
            i = rng.randrange(0, len(out) - 4) & ~3
            value = rng.choice([0, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, rng.randrange(1 << 32), len(out)])
            out[i : i + 4] = value.to_bytes(4, "little")
    elif kind == 3:
        i = 16 + 8 * rng.randrange(8)
        value = rng.choice([0, 2**64 - 1, rng.randrange(2**64), rng.randrange(len(out))])
        out[i : i + 8] = value.to_bytes(8, "little")
    else:
        out = bytearray(offset_field_mutation(bytes(out), rng))
    return bytes(out)


def offset_field_mutation(data: bytes, rng: random.Random) -> bytes:
    """Point a FlatBuffers root offset, or the root table's vtable offset, somewhere else:
    past the end, backwards, at itself, or at another table."""
    out = bytearray(data)
    section = rng.randrange(3)
    (offset,) = struct.unpack_from("<Q", out, 16 + 16 * section)
    if offset + 4 > len(out):
        return data
    if rng.random() < 0.5:
        where, value = offset, rng.choice([0, 2, 0xFFFFFFFC, 0x7FFFFFFF, rng.randrange(64) * 4])
    else:
        where = offset + struct.unpack_from("<I", out, offset)[0]
        if where + 4 > len(out):
            return data
        value = rng.choice([0, -4, 4, -0x7FFFFFFF, rng.randrange(-256, 256)]) & 0xFFFFFFFF
    out[where : where + 4] = value.to_bytes(4, "little")
    return bytes(out)


def fuzz(data: bytes, seed: int, cases: int) -> int:
    rng = random.Random(seed)
    rejected = 0
    for _ in range(cases):
        case = mutate(data, rng)
        start = time.perf_counter()
        try:
            read(case)
        except VGFFormatError:
            rejected += 1
        elapsed = time.perf_counter() - start
        assert elapsed < SLOW_CASE_S, f"case took {elapsed:.2f}s (seed {seed})"
    return rejected


def test_fuzz_real_files_quick(real_model):
    data = real_model.read_bytes()
    assert fuzz(data, seed=1234, cases=100) > 0


def test_offset_fields_quick(real_model, vgf_model):
    rng = random.Random(5)
    for data in (real_model.read_bytes(), vgf_model("format_compute_aliasing").read_bytes()):
        rejected = 0
        for _ in range(40):
            try:
                read(offset_field_mutation(data, rng))
            except VGFFormatError as exc:
                assert exc.section is not None
                rejected += 1
        assert rejected > 20


def test_fuzz_made_files_quick(vgf_model):
    for name in ("format_segments", "format_const_dtypes"):
        assert fuzz(vgf_model(name).read_bytes(), seed=99, cases=600) > 0


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_fuzz_long(real_model, vgf_model, seed):
    fuzz(real_model.read_bytes(), seed=seed, cases=1500)
    fuzz(vgf_model("format_segments").read_bytes(), seed=seed, cases=5000)
