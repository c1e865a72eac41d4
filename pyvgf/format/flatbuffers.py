"""FlatBuffers as reusable `construct` building blocks, and a builder that lays bytes out
exactly as the C++ `flatbuffers::FlatBufferBuilder` does.

Reading: `Table`, `Vector`, `String`, `Union` and `Ref` are `construct.Construct` subclasses, so
a schema reads like the `.fbs` file (see `pyvgf.format.schema`). `parse_stream` starts at the
stream position; positions are absolute file offsets, and the whole file (`data`, a
memoryview), the section `bounds` and a byte `budget` come in as construct parameters. Every
offset is checked against the section bounds before it is followed and every vector length
against the bytes left, so hostile input fails fast with `FlatBufferError` (a
`construct.ConstructError` carrying the byte offset).

Writing: `Builder` builds back to front like the C++ builder (alignment, padding, vtable
deduplication, `Finish`), and `Table.build_into` adds fields in the order `flatc` generates
(largest scalars first, then reverse declaration order), so the bytes match Arm's encoder.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import construct
import numpy as np

UOFFSET = 4
VOFFSET = 2


class FlatBufferError(construct.ConstructError):
    """Malformed FlatBuffers data at absolute byte `offset`."""

    def __init__(self, message: str, offset: int):
        self.offset = offset
        super().__init__(message)


@dataclass(frozen=True)
class Span:
    """A run of bytes in the file: `size` bytes at absolute `offset` (not read)."""

    offset: int
    size: int


class Budget:
    """Caps the bytes one parse may visit (and copy), counting a shared object at every visit,
    so many references to one large sub-object cannot multiply work or memory."""

    def __init__(self, limit: int):
        self.left = limit

    def spend(self, n: int, offset: int) -> None:
        self.left -= n
        if self.left < 0:
            raise FlatBufferError("FlatBuffers objects are referenced too often (shared-reference blow-up)", offset)


class Cursor:
    """One parse: the file buffer, the section bounds [lo, hi) and the budget."""

    __slots__ = ("budget", "data", "hi", "lo")

    def __init__(self, data: memoryview, lo: int, hi: int, budget: Budget):
        self.data, self.lo, self.hi, self.budget = data, lo, hi, budget

    def check(self, offset: int, size: int) -> None:
        if offset < self.lo or offset + size > self.hi:
            raise FlatBufferError(f"{size} bytes at {offset} lie outside the section [{self.lo}, {self.hi})", offset)

    def unpack(self, fmt: struct.Struct, offset: int) -> tuple:
        self.check(offset, fmt.size)
        return fmt.unpack_from(self.data, offset)

    def bytes(self, offset: int, size: int) -> bytes:
        self.check(offset, size)
        return self.data[offset : offset + size].tobytes()


_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_VT_HEAD = struct.Struct("<HH")


class Scalar:
    """A scalar field type: struct format, numpy dtype and byte size."""

    def __init__(self, fmt: str):
        self.fmt = "<" + fmt
        self.struct = struct.Struct(self.fmt)
        self.size = self.struct.size
        self.dtype = np.dtype(self.fmt)

    def pack(self, value: int) -> bytes:
        try:
            return self.struct.pack(value)
        except struct.error as exc:
            raise ValueError(f"{value!r} does not fit a {self.fmt} field") from exc


u8 = Scalar("B")
u32 = Scalar("I")
i64 = Scalar("q")


class _Located(construct.Construct):
    """A FlatBuffers object parsed at the current stream position (absolute offset)."""

    def _parse(self, stream, context, path):
        params = context._params
        lo, hi = params.bounds
        cursor = Cursor(params.data, lo, hi, params.budget)
        return self.parse_at(cursor, construct.stream_tell(stream, path))

    def parse_at(self, cur: Cursor, offset: int) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _build(self, obj, stream, context, path):
        raise construct.ConstructError("FlatBuffers objects are built with Builder, not construct.build")

    def _sizeof(self, context, path):
        raise construct.SizeofError("FlatBuffers objects have no fixed size")


class Ref(_Located):
    """A uoffset (u32, relative to its own position) to `subcon`, which is parsed there."""

    def __init__(self, subcon: _Located):
        super().__init__()
        self.subcon = subcon

    def parse_at(self, cur: Cursor, offset: int) -> Any:
        return self.subcon.parse_at(cur, offset + cur.unpack(_U32, offset)[0])


class Vector(_Located):
    """`[element]`: u32 length, then elements. Scalars come back as a numpy array, or with
    `raw=True` as a `Span` of the file (not read, so large payloads are never copied)."""

    def __init__(self, element: Scalar | _Located, *, raw: bool = False):
        super().__init__()
        self.element = element
        self.raw = raw

    def parse_at(self, cur: Cursor, offset: int) -> Any:
        (count,) = cur.unpack(_U32, offset)
        start = offset + UOFFSET
        size = self.element.size if isinstance(self.element, Scalar) else UOFFSET
        if count > (cur.hi - start) // size:
            raise FlatBufferError(f"vector of {count} elements runs past the section end {cur.hi}", offset)
        if isinstance(self.element, Scalar):
            if self.raw:
                cur.budget.spend(UOFFSET, offset)
                return Span(start, count * size)
            cur.budget.spend(UOFFSET + count * size, offset)
            return np.frombuffer(cur.bytes(start, count * size), dtype=self.element.dtype)
        cur.budget.spend(UOFFSET * (count + 1), offset)
        refs = struct.unpack_from(f"<{count}I", cur.data, start)
        return [self.element.parse_at(cur, start + UOFFSET * i + ref) for i, ref in enumerate(refs)]


class String(_Located):
    """`string`: u32 length, UTF-8 bytes, a terminating zero."""

    def parse_at(self, cur: Cursor, offset: int) -> str:
        (count,) = cur.unpack(_U32, offset)
        if count > cur.hi - offset - UOFFSET - 1:
            raise FlatBufferError(f"string of {count} bytes runs past the section end {cur.hi}", offset)
        cur.budget.spend(UOFFSET + count + 1, offset)
        data = cur.bytes(offset + UOFFSET, count + 1)
        if data[-1] != 0:
            raise FlatBufferError("string is not zero-terminated", offset)
        try:
            return data[:-1].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FlatBufferError(f"string is not UTF-8 ({exc.reason})", offset) from None


@dataclass(frozen=True)
class Field:
    """One table field: vtable slot, name, type and schema default (scalars only)."""

    slot: int
    name: str
    kind: Any
    """A Scalar, or a _Located object reached through a uoffset."""
    default: Any = None

    @property
    def inline_size(self) -> int:
        return self.kind.size if isinstance(self.kind, Scalar) else UOFFSET


@dataclass(frozen=True)
class Union:
    """A union: the `<name>_type` u8 tag in slot `slot`, the value's uoffset in `slot + 1`."""

    slot: int
    name: str
    members: dict[int, Table]

    def fields(self) -> tuple[Field, Field]:
        return Field(self.slot, self.name + "_type", u8, 0), Field(self.slot + 1, self.name, _UnionValue())


class _UnionValue(_Located):
    """Placeholder kind for a union's value slot (resolved by the tag)."""


class Table(_Located):
    """A FlatBuffers table: soffset to its vtable, fields located through the vtable.

    Parses to a dict keyed by field name; absent fields take their schema default (None for
    offsets). Unions parse to `(tag, value)` under their own name.
    """

    def __init__(self, name: str, *items: Field | Union, sized: bool = True):
        super().__init__()
        self.name = name
        self.sized = sized
        """Fields must lie inside the table size their vtable declares. ExecuTorch's programs
        declare too small a size for tables with 8-byte scalars, so they are read with
        sized=False: their fields are then checked against the section bounds only."""
        self.unions = [item for item in items if isinstance(item, Union)]
        self.fields: list[Field] = []
        for item in items:
            self.fields.extend(item.fields() if isinstance(item, Union) else [item])
        self.by_name = {f.name: f for f in self.fields}

    def parse_at(self, cur: Cursor, offset: int) -> dict[str, Any]:
        if (offset - cur.lo) % 4:
            raise FlatBufferError(f"{self.name} table is not 4-byte aligned in its section", offset)
        (soffset,) = cur.unpack(_I32, offset)
        vtable = offset - soffset
        vt_size, table_size = cur.unpack(_VT_HEAD, vtable)
        if vt_size < 4 or vt_size % 2:
            raise FlatBufferError(f"{self.name} vtable size {vt_size} is invalid", vtable)
        vt = cur.bytes(vtable, vt_size)
        cur.check(offset, table_size)
        cur.budget.spend(table_size + vt_size, offset)
        out: dict[str, Any] = {}
        for f in self.fields:
            pos = 4 + 2 * f.slot
            voff = struct.unpack_from("<H", vt, pos)[0] if pos + 2 <= vt_size else 0
            if voff and self.sized and voff + f.inline_size > table_size:
                raise FlatBufferError(f"{self.name}.{f.name} lies outside its table", offset)
            where = offset + voff
            if isinstance(f.kind, Scalar):
                out[f.name] = cur.unpack(f.kind.struct, where)[0] if voff else f.default
            elif isinstance(f.kind, _UnionValue):
                out[f.name] = where if voff else None
            else:
                out[f.name] = Ref(f.kind).parse_at(cur, where) if voff else None
        for u in self.unions:
            tag, where = out.pop(u.name + "_type"), out.pop(u.name)
            if where is None or tag == 0:
                out[u.name] = (tag, None)
            elif tag not in u.members:
                raise FlatBufferError(f"{self.name}.{u.name} has unknown union type {tag}", offset)
            else:
                out[u.name] = (tag, Ref(u.members[tag]).parse_at(cur, where))
        return out

    def add_order(self) -> list[Field]:
        """The order flatc's generated `Create<Table>()` adds fields: by inline size, largest
        first, and within one size in reverse declaration order."""
        order: list[Field] = []
        for size in (8, 4, 2, 1):
            order.extend(f for f in reversed(self.fields) if f.inline_size == size)
        return order

    def build_into(self, builder: Builder, **values: Any) -> int:
        """Add a table of this type (offsets of children already built) and return its offset.
        Scalars equal to their default are omitted, offsets that are None are absent."""
        unknown = set(values) - set(self.by_name)
        if unknown:
            raise TypeError(f"{self.name} has no field(s) {sorted(unknown)}")
        start = builder.start_table()
        for f in self.add_order():
            value = values.get(f.name)
            if isinstance(f.kind, Scalar):
                builder.add_scalar(f.slot, f.kind, f.default if value is None else value, f.default)
            elif value is not None:
                builder.add_offset(f.slot, value)
        return builder.end_table(start)


class Builder:
    """Back-to-front FlatBuffers builder with the C++ FlatBufferBuilder's exact layout."""

    def __init__(self, initial_size: int = 1024):
        self._buf = bytearray(initial_size)
        self._head = initial_size
        self._minalign = 1
        self._vtables: list[int] = []
        self._fields: list[tuple[int, int]] = []
        self._max_voffset = 0

    def size(self) -> int:
        return len(self._buf) - self._head

    def _reserve(self, n: int) -> None:
        if n > self._head:
            size = self.size()
            cap = max(len(self._buf) * 2, size + n + 1024)
            new = bytearray(cap)
            new[cap - size :] = self._buf[self._head :]
            self._buf, self._head = new, cap - size

    def _push(self, data: bytes | memoryview) -> None:
        n = len(data)
        self._reserve(n)
        self._head -= n
        self._buf[self._head : self._head + n] = data

    def _fill(self, n: int) -> None:
        if n:
            self._reserve(n)
            self._head -= n
            self._buf[self._head : self._head + n] = bytes(n)

    def _track_min_align(self, align: int) -> None:
        self._minalign = max(self._minalign, align)

    def _padding(self, size: int, align: int) -> int:
        return (-size) % align

    def align(self, elem_size: int) -> None:
        self._track_min_align(elem_size)
        self._fill(self._padding(self.size(), elem_size))

    def pre_align(self, length: int, alignment: int) -> None:
        if length == 0:
            return
        self._track_min_align(alignment)
        self._fill(self._padding(self.size() + length, alignment))

    def _push_scalar(self, kind: Scalar, value: int) -> int:
        self.align(kind.size)
        self._push(kind.pack(value))
        return self.size()

    def refer_to(self, off: int) -> int:
        self.align(UOFFSET)
        return self.size() - off + UOFFSET

    def create_string(self, text: str) -> int:
        data = text.encode("utf-8")
        self.pre_align(len(data) + 1, UOFFSET)
        self._fill(1)
        self._push(data)
        return self._push_scalar(u32, len(data))

    def _start_vector(self, length: int, elem_size: int, alignment: int) -> None:
        self.pre_align(length * elem_size, UOFFSET)
        self.pre_align(length * elem_size, alignment)

    def force_vector_alignment(self, length: int, elem_size: int, alignment: int) -> None:
        self.pre_align(length * elem_size, alignment)

    def create_scalar_vector(self, kind: Scalar, values: Any) -> int:
        """A vector of scalars from a sequence, numpy array or bytes-like object."""
        data = np.ascontiguousarray(values, dtype=kind.dtype).reshape(-1)
        self._start_vector(len(data), kind.size, kind.size)
        self._push(data.data.cast("B"))
        return self._push_scalar(u32, len(data))

    def create_offset_vector(self, offsets: list[int]) -> int:
        self._start_vector(len(offsets), UOFFSET, UOFFSET)
        for off in reversed(offsets):
            self._push_scalar(u32, self.refer_to(off))
        return self._push_scalar(u32, len(offsets))

    def start_table(self) -> int:
        self._fields = []
        self._max_voffset = 0
        return self.size()

    def add_scalar(self, slot: int, kind: Scalar, value: int, default: int) -> None:
        if value == default:
            return
        self._track_field(slot, self._push_scalar(kind, value))

    def add_offset(self, slot: int, off: int) -> None:
        self._track_field(slot, self._push_scalar(u32, self.refer_to(off)))

    def _track_field(self, slot: int, loc: int) -> None:
        voffset = 4 + 2 * slot
        self._fields.append((voffset, loc))
        self._max_voffset = max(self._max_voffset, voffset)

    def end_table(self, start: int) -> int:
        loc = self._push_scalar(Scalar("i"), 0)
        vt_size = max(self._max_voffset + VOFFSET, 4)
        vt = bytearray(vt_size)
        struct.pack_into("<HH", vt, 0, vt_size, loc - start)
        for voffset, field_loc in self._fields:
            struct.pack_into("<H", vt, voffset, loc - field_loc)
        self._fields = []
        vt_use = None
        for old in self._vtables:
            pos = len(self._buf) - old
            if self._buf[pos : pos + 2] == vt[0:2] and self._buf[pos : pos + vt_size] == vt:
                vt_use = old
                break
        if vt_use is None:
            self._push(bytes(vt))
            vt_use = self.size()
            self._vtables.append(vt_use)
        table_pos = len(self._buf) - loc
        struct.pack_into("<i", self._buf, table_pos, vt_use - loc)
        return loc

    def finish(self, root: int) -> bytes:
        self._vtables = []
        self.pre_align(UOFFSET, self._minalign)
        self._push_scalar(u32, self.refer_to(root))
        return bytes(memoryview(self._buf)[self._head :])

