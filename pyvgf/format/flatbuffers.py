"""FlatBuffers as reusable `construct` building blocks, and a builder that lays bytes out
exactly as the C++ `flatbuffers::FlatBufferBuilder` does.

Reading: `Table`, `Vector`, `String`, `Union` and `Ref` are `construct.Construct` subclasses, so
a schema reads like the `.fbs` file (see `pyvgf.format.schema`). `parse_stream` starts at the
stream position; positions are absolute file offsets, and the whole file (`data`, a
memoryview), the section `bounds` and a byte `budget` come in as construct parameters. Every
offset is checked against the section bounds before it is followed and every vector length
against the bytes left, so hostile input fails fast with `FlatBufferError` (a
`construct.ConstructError` carrying the byte offset). `Enum` fields read as IntEnum members,
a `Table` with a `model` reads as that class, and `Adapter` (construct's `_decode`/`_encode`
pair) maps any other object to the value the caller wants (`Ints`, `View`, `Sole`).

Writing: every object builds from the value it parses to (`build(builder, value)`, children
first, in the table's `order`). `Builder` builds back to front like the C++ builder
(alignment, padding, vtable deduplication, `Finish`), and `Table.build_into` adds fields in
the order `flatc` generates (largest scalars first, then reverse declaration order), so the
bytes match Arm's encoder. Vtables, alignment and offsets are the builder's, not construct's:
construct builds front to back and has no notion of a vtable shared between tables.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, cast

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
    """One parse: the file buffer, the section bounds [lo, hi) and the budget. `data` is a
    memoryview of the file; `View` needs it to be one of the file's uint8 numpy array."""

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


class Enum(Scalar):
    """A scalar read as a member of `enum` (an IntEnum); a value it lacks is malformed data."""

    def __init__(self, base: Scalar, enum: type[IntEnum]):
        super().__init__(base.fmt[1:])
        self.enum = enum

    def decode(self, value: int, where: str, offset: int) -> IntEnum:
        try:
            return self.enum(value)
        except ValueError:
            raise FlatBufferError(f"{where} has unknown value {value}", offset) from None


u8 = Scalar("B")
u32 = Scalar("I")
i64 = Scalar("q")


class _Located(construct.Construct):
    """A FlatBuffers object parsed at the current stream position (absolute offset), and built
    (back to front, children first) with `build(builder, value)`, which returns its offset."""

    def _parse(self, stream, context, path):
        params = context._params
        lo, hi = params.bounds
        cursor = Cursor(params.data, lo, hi, params.budget)
        return self.parse_at(cursor, construct.stream_tell(stream, path))

    def parse_at(self, cur: Cursor, offset: int) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def build(self, builder: Builder, value: Any) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def _build(self, obj, stream, context, path):
        raise construct.ConstructError("FlatBuffers objects are built with their build(Builder, value)")

    def _sizeof(self, context, path):
        raise construct.SizeofError("FlatBuffers objects have no fixed size")


class Ref(_Located):
    """A uoffset (u32, relative to its own position) to `subcon`, which is parsed there."""

    def __init__(self, subcon: _Located):
        super().__init__()
        self.subcon = subcon

    def parse_at(self, cur: Cursor, offset: int) -> Any:
        return self.subcon.parse_at(cur, offset + cur.unpack(_U32, offset)[0])

    def build(self, builder: Builder, value: Any) -> int:
        return self.subcon.build(builder, value)


class Adapter(_Located):
    """`construct.Adapter` for FlatBuffers objects: what `subcon` parses goes through `_decode`
    (given the parse's Cursor and the object's offset, for views of the file and for errors);
    a value to build goes through `_encode` into what `subcon` builds from."""

    def __init__(self, subcon: _Located):
        super().__init__()
        self.subcon = subcon

    def parse_at(self, cur: Cursor, offset: int) -> Any:
        return self._decode(self.subcon.parse_at(cur, offset), cur, offset)

    def build(self, builder: Builder, value: Any) -> int:
        return self.subcon.build(builder, self._encode(value))

    def _decode(self, obj: Any, cur: Cursor, offset: int) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _encode(self, value: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


class Ints(Adapter):
    """A vector of integer scalars as a list of Python ints."""

    def __init__(self, element: Scalar):
        super().__init__(Vector(element))

    def _decode(self, obj: np.ndarray, cur: Cursor, offset: int) -> list[int]:
        return obj.tolist()

    def _encode(self, value: list[int]) -> list[int]:
        return value


class View(Adapter):
    """A vector of scalars as a view of the file's numpy array (no copy); `align` as Vector's."""

    def __init__(self, element: Scalar, align: int | None = None):
        super().__init__(Vector(element, raw=True, align=align))
        self.dtype = element.dtype

    def _decode(self, obj: Span, cur: Cursor, offset: int) -> np.ndarray:
        data = cast(np.ndarray, cur.data.obj)  # the file's array, which the memoryview is of
        return data[obj.offset : obj.offset + obj.size].view(self.dtype)

    def _encode(self, value: np.ndarray) -> np.ndarray:
        return value


class Sole(Adapter):
    """A table of one field, read as that field's value (and built from one)."""

    def __init__(self, table: Table):
        super().__init__(table)
        (self.name,) = table.names

    def _decode(self, obj: dict[str, Any], cur: Cursor, offset: int) -> Any:
        return obj[self.name]

    def _encode(self, value: Any) -> dict[str, Any]:
        return {self.name: value}


class Vector(_Located):
    """`[element]`: u32 length, then elements. Scalars come back as a numpy array, or with
    `raw=True` as a `Span` of the file (not read, so large payloads are never copied).
    `align` is the schema's force_align: the elements start at that alignment when built."""

    def __init__(self, element: Scalar | _Located, *, raw: bool = False, align: int | None = None):
        super().__init__()
        self.element = element
        self.raw = raw
        self.align = align

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

    def build(self, builder: Builder, values: Any) -> int:
        """A vector of `values` (for scalars: a sequence, numpy array or bytes-like object);
        objects are built first, in order."""
        if isinstance(self.element, Scalar):
            data = np.ascontiguousarray(values, dtype=self.element.dtype).reshape(-1)
            if self.align:
                builder.force_vector_alignment(data.size, self.element.size, self.align)
            return builder.create_scalar_vector(self.element, data)
        return builder.create_offset_vector([self.element.build(builder, v) for v in values])


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

    def build(self, builder: Builder, value: str) -> int:
        return builder.create_string(value)


@dataclass(frozen=True)
class Field:
    """One table field: vtable slot, name, type and default.

    A scalar's default is the schema's: an absent field reads as it, and a value equal to it
    is not written. An offset field's default is what it reads as when absent: None, or a
    factory (`list`, `str`) called for each object, so no two objects share one value."""

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
    """A union: the `<name>_type` u8 tag in slot `slot` (read as `tag`, an Enum to name it),
    the value's uoffset in `slot + 1`. It parses to `(tag, value)` under `name` (value None
    when absent) and builds from one."""

    slot: int
    name: str
    members: dict[int, _Located]
    tag: Scalar = u8

    def fields(self) -> tuple[Field, Field]:
        return Field(self.slot, self.name + "_type", self.tag, 0), Field(self.slot + 1, self.name, _UnionValue())


class _UnionValue(_Located):
    """Placeholder kind for a union's value slot (resolved by the tag)."""


_SCALAR, _ENUM, _UNION, _OFFSET = "scalar", "enum", "union", "offset"


def _mode(kind: Any) -> str:
    """How a table reads a field of this kind."""
    if isinstance(kind, Enum):
        return _ENUM
    if isinstance(kind, Scalar):
        return _SCALAR
    return _UNION if isinstance(kind, _UnionValue) else _OFFSET


class Table(_Located):
    """A FlatBuffers table: soffset to its vtable, fields located through the vtable.

    Parses to a dict keyed by field name, or with `model` (a class whose attributes are the
    field names) to `model(**fields)`; absent fields take their default. Unions parse to
    `(tag, value)` under their own name. `build` takes such a dict or model object and creates
    the children in `order` (offset field names; by default in declaration order), as the
    producer being matched creates them.
    """

    def __init__(self, name: str, *items: Field | Union, sized: bool = True, model: type | None = None,
                 order: tuple[str, ...] | None = None):
        super().__init__()
        self.name = name
        self.sized = sized
        """Fields must lie inside the table size their vtable declares. ExecuTorch's programs
        declare too small a size for tables with 8-byte scalars, so they are read with
        sized=False: their fields are then checked against the section bounds only."""
        self.model = model
        self.unions = {item.name: item for item in items if isinstance(item, Union)}
        self.fields: list[Field] = []
        for item in items:
            self.fields.extend(item.fields() if isinstance(item, Union) else [item])
        self.by_name = {f.name: f for f in self.fields}
        self.names = [item.name for item in items]
        """The names a parsed value has: fields, and unions under their own name."""
        tags = {u.name + "_type" for u in self.unions.values()}
        self.scalars = [f.name for f in self.fields if isinstance(f.kind, Scalar) and f.name not in tags]
        self.order = order or tuple(n for n in self.names if n not in self.scalars)
        self.add_order = [f for size in (8, 4, 2, 1) for f in reversed(self.fields) if f.inline_size == size]
        """The order flatc's generated `Create<Table>()` adds fields: by inline size, largest
        first, and within one size in reverse declaration order."""
        self._plan = [(f.name, f.slot, f.inline_size, _mode(f.kind), f.kind, f.default) for f in self.fields]
        if model is not None and self.unions:
            raise TypeError(f"{name}: a table with a union is mapped to a model by an Adapter")

    def parse_at(self, cur: Cursor, offset: int) -> Any:
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
        slots = struct.unpack_from(f"<{(vt_size - 4) // 2}H", vt, 4)
        out: dict[str, Any] = {}
        for name, slot, size, mode, kind, default in self._plan:
            voff = slots[slot] if slot < len(slots) else 0
            if voff and self.sized and voff + size > table_size:
                raise FlatBufferError(f"{self.name}.{name} lies outside its table", offset)
            where = offset + voff
            if mode is _SCALAR:
                out[name] = cur.unpack(kind.struct, where)[0] if voff else default
            elif mode is _ENUM:
                value = cur.unpack(kind.struct, where)[0] if voff else default
                out[name] = kind.decode(value, self.name + "." + name, where)
            elif mode is _UNION:
                out[name] = where if voff else None
            elif voff:
                out[name] = kind.parse_at(cur, where + cur.unpack(_U32, where)[0])
            else:
                out[name] = default() if callable(default) else default
        for u in self.unions.values():
            tag, where = out.pop(u.name + "_type"), out.pop(u.name)
            if where is None or tag == 0:
                out[u.name] = (tag, None)
            elif tag not in u.members:
                raise FlatBufferError(f"{self.name}.{u.name} has unknown union type {tag}", offset)
            else:
                out[u.name] = (tag, u.members[tag].parse_at(cur, where + cur.unpack(_U32, where)[0]))
        return out if self.model is None else self.model(**out)

    def build(self, builder: Builder, value: Any) -> int:
        """Build a table from a dict or model object: its children in `order`, then itself."""
        values = value if self.model is None else {name: getattr(value, name) for name in self.names}
        args = {name: values.get(name) for name in self.scalars}
        for name in self.order:
            item = values.get(name)
            if name in self.unions:
                tag, item = item or (0, None)
                args[name + "_type"] = tag
                kind = self.unions[name].members.get(tag)
                if item is not None:
                    if kind is None:
                        raise ValueError(f"{self.name}.{name} has a value but union type {tag}")
                    args[name] = kind.build(builder, item)
            else:
                args[name] = self.build_field(builder, name, item)
        return self.build_into(builder, **args)

    def build_field(self, builder: Builder, name: str, value: Any) -> int | None:
        """Build the object offset field `name` refers to; None (absent) for a None value."""
        return None if value is None else self.by_name[name].kind.build(builder, value)

    def build_into(self, builder: Builder, **values: Any) -> int:
        """Add a table of this type (offsets of children already built) and return its offset.
        Scalars equal to their default are omitted, offsets that are None are absent."""
        unknown = set(values) - set(self.by_name)
        if unknown:
            raise TypeError(f"{self.name} has no field(s) {sorted(unknown)}")
        start = builder.start_table()
        for f in self.add_order:
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

