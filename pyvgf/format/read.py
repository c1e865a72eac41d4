"""Read a VGF container into the object model: one private copy of the file (or an opt-in
read-only mapping), constants as read-only views of it."""

from __future__ import annotations

import mmap as _mmap
import os
import stat
from pathlib import Path
from typing import Any

import construct
import numpy as np

from ..errors import VGFFormatError
from ..limits import memory_budget
from . import schema
from .flatbuffers import Budget, FlatBufferError
from .model import VGF, Constant, Header
from .validate import validate


class _ViewStream:
    """A seekable read-only stream over a memoryview (positions are absolute file offsets)."""

    def __init__(self, view: memoryview):
        self._view = view
        self._pos = 0

    def seek(self, pos: int, whence: int = 0) -> int:
        self._pos = pos if whence == 0 else self._pos + pos if whence == 1 else len(self._view) + pos
        return self._pos

    def tell(self) -> int:
        return self._pos

    def read(self, n: int) -> bytes:
        data = self._view[self._pos : self._pos + n].tobytes()
        self._pos += len(data)
        return data


def snapshot(source: str | os.PathLike | bytes | bytearray | memoryview, use_mmap: bool = False) -> np.ndarray:
    """The whole file as a read-only uint8 array that nobody else can change.

    A path is read into an immutable `bytes` (one copy of the file), or, with `use_mmap`,
    mapped read-only (no copy; see `read`). `bytes` and read-only buffers are used in place; a
    mutable buffer (bytearray, a writable memoryview) is copied, so later writes to it never
    reach a VGF read from it.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        if not isinstance(source, bytes) and not memoryview(source).readonly:
            source = bytes(source)
        return np.frombuffer(source, dtype=np.uint8)
    with open(Path(source), "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise VGFFormatError(f"{os.fspath(source)!r} is not a regular file", section="header", offset=0)
        if info.st_size == 0:
            return np.empty(0, dtype=np.uint8)
        if use_mmap:
            return np.frombuffer(_mmap.mmap(f.fileno(), 0, access=_mmap.ACCESS_READ), dtype=np.uint8)
        if info.st_size > memory_budget():
            raise VGFFormatError(f"a file of {info.st_size} bytes is over the memory budget of {memory_budget()} "
                                 "bytes (pyvgf.limits); read it with mmap=True", section="header", offset=0)
        contents = f.read(info.st_size)  # bytes: immutable; shorter if the file shrank meanwhile
    return np.frombuffer(contents, dtype=np.uint8)


def read(source: str | os.PathLike | bytes | bytearray | memoryview, *, mmap: bool = False) -> VGF:
    """Read a VGF file (path) or buffer into a `VGF`; constants are read-only views of it.

    A path is read into memory: the VGF holds one private copy of the file (its size in
    memory), so a file rewritten, truncated or deleted afterwards changes nothing. With
    `mmap=True` the file is mapped instead (no copy: constant pages are read from disk when
    used and can be dropped under memory pressure), at a risk the caller takes: a file
    truncated while mapped makes the next read of a lost page end the process with SIGBUS,
    and one rewritten in place changes what the VGF holds. Use it only for files nobody
    writes while they are loaded.
    """
    data = snapshot(source, mmap)
    view = data.data
    stream = _ViewStream(view)
    size = len(data)
    header, sections = _read_header(view, size)
    parsed = {}
    for name, (offset, length) in zip(schema.SECTIONS[:3], sections[:3]):
        parsed[name] = _read_flatbuffer(stream, view, name, offset, length)
    c_off, c_size = sections[3]
    if c_size < 8:
        raise VGFFormatError(f"constant section of {c_size} bytes is too small", section="constants", offset=c_off)
    legacy = view[c_off : c_off + 8].tobytes() != schema.CONST00
    if legacy:
        constants = _read_flatbuffer(stream, view, "constants", c_off, c_size)
    else:
        constants = _constants_v00(stream, data, c_off, c_size)
    vgf = VGF(
        header=header,
        modules=parsed["module table"],
        sequence=parsed["model sequence table"],
        resources=parsed["model resource table"],
        constants=constants,
        legacy_constants=legacy,
    )
    validate(vgf)
    return vgf


def _read_header(view: memoryview, size: int) -> tuple[Header, list[tuple[int, int]]]:
    if size < schema.HEADER_SIZE:
        raise VGFFormatError(
            f"file of {size} bytes is smaller than the {schema.HEADER_SIZE}-byte header", section="header", offset=0
        )
    return schema.FileHeader.parse(view[: schema.HEADER_SIZE].tobytes(), size=size)


def _read_flatbuffer(stream: _ViewStream, view: memoryview, name: str, offset: int, size: int) -> Any:
    if size < 4:
        raise VGFFormatError(f"FlatBuffers section of {size} bytes is too small", section=name, offset=offset)
    if size > 0xFFFFFFFF:
        raise VGFFormatError(f"FlatBuffers section of {size} bytes is over 4 GiB", section=name, offset=offset)
    stream.seek(offset)
    try:
        return schema.ROOTS[name].parse_stream(
            stream, data=view, bounds=(offset, offset + size), budget=Budget(4 * size + 4096)
        )
    except FlatBufferError as exc:
        raise VGFFormatError(str(exc), section=name, offset=exc.offset) from None
    except construct.ConstructError as exc:
        raise VGFFormatError(f"malformed FlatBuffers data: {exc}", section=name, offset=offset) from None


def _constants_v00(stream: _ViewStream, data: np.ndarray, offset: int, size: int) -> list[Constant]:
    if size < 16:
        raise VGFFormatError(f"CONST00 section of {size} bytes is too small", section="constants", offset=offset)
    stream.seek(offset)
    return schema.ConstantSectionV00.parse_stream(stream, array=data, bounds=(offset, offset + size))
