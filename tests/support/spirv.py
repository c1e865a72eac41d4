"""Test helpers for the SPIR-V tests: a fixture's SPIR-V words, and hand-made instructions.

The words come from Arm's `vgf_dump --dump-spirv` (the reference decoder), so these tests do
not depend on pyvgf's own container reader.
"""

from __future__ import annotations

import functools
import hashlib
import subprocess
from pathlib import Path

import numpy as np

import fixtures  # tools/fixtures.py

ROOT = fixtures.ROOT
REAL_MODELS = fixtures.REAL_MODELS

SPIRV_MODELS = sorted(p.stem for p in fixtures.MODELS.glob("spirv_*.mlir"))


@functools.cache
def spirv_words(vgf: Path, index: int = 0) -> np.ndarray:
    """Module `index` of a VGF file as uint32 words, dumped by vgf_dump (cached by content)."""
    data = Path(vgf).read_bytes()
    key = hashlib.sha256(data).hexdigest()[:24]
    out = fixtures.CACHE / f"{key}.{index}.spv"
    if not out.exists():
        fixtures.CACHE.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        subprocess.run(
            [fixtures.tool("vgf_dump"), "-i", str(vgf), "--dump-spirv", str(index), "-o", str(tmp)],
            check=True,
            capture_output=True,
        )
        tmp.replace(out)
    words = np.frombuffer(out.read_bytes(), dtype="<u4").astype(np.uint32)
    words.flags.writeable = False
    return words


def model_words(name: str) -> np.ndarray:
    """The SPIR-V of tests/models/NAME.mlir converted by model-converter."""
    return spirv_words(fixtures.model(name))


def string_words(text: str) -> list[int]:
    """A SPIR-V literal string: UTF-8, NUL-terminated, zero-padded to whole words."""
    raw = text.encode() + b"\0"
    raw += b"\0" * (-len(raw) % 4)
    return [int.from_bytes(raw[i : i + 4], "little") for i in range(0, len(raw), 4)]


def inst(opcode: int, *operands: int) -> list[int]:
    """One instruction's words: the word count/opcode word, then the operand words."""
    return [(len(operands) + 1) << 16 | opcode, *operands]


def offsets(words: np.ndarray) -> list[tuple[int, int, int]]:
    """(word offset, opcode, word count) of each instruction, walking the word counts."""
    out, pos = [], 5
    while pos < len(words):
        count, opcode = int(words[pos]) >> 16, int(words[pos]) & 0xFFFF
        out.append((pos, opcode, count))
        pos += count
    return out


def find(words: np.ndarray, opcode: int, nth: int = 0) -> tuple[int, int]:
    """(word offset, word count) of the nth instruction with `opcode`."""
    hits = [(pos, count) for pos, op, count in offsets(words) if op == opcode]
    return hits[nth]


def splice(words: np.ndarray, at: int, remove: int, new: list[int]) -> np.ndarray:
    """A copy of `words` with `remove` words at `at` replaced by `new`."""
    return np.concatenate([words[:at], np.array(new, dtype=np.uint32), words[at + remove :]]).astype(np.uint32)


def random_input(ty, rng: np.random.Generator) -> np.ndarray:
    """Seeded values for a graph input of TensorType `ty`: integers in [-100, 100], floats in
    [-4, 4)."""
    if ty.dtype.kind in "iu":
        return rng.integers(-100, 100, ty.shape, endpoint=True).astype(ty.dtype)
    return rng.uniform(-4, 4, ty.shape).astype(ty.dtype)


def vgf_graph(path: Path) -> tuple:
    """The graph of a one-segment VGF and its graph constants, read by pyvgf.format."""
    from pyvgf.format import read
    from pyvgf.spirv import decode_graph

    vgf = read(path)
    (segment,) = vgf.sequence.segments
    module = vgf.modules[segment.module_index]
    graph = decode_graph(module.code, module.entry_point)
    constants = {b.graph_constant_id: vgf.constant_array(b.constant_table_index)
                 for b in segment.graph_constants()}
    return graph, constants
