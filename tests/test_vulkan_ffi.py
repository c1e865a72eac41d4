"""The ARM declarations in pyvgf/hal/vulkan/_ffi.py against the Vulkan registry (vk.xml of
the vulkan-object package): every struct member, every function pointer, every enum value."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pyvgf.hal.vulkan import _ffi
from pyvgf.hal.vulkan._ffi import ffi


@pytest.fixture(scope="module")
def registry():
    vulkan_object = pytest.importorskip("vulkan_object",
                                        reason="the Vulkan registry (pip vulkan-object) is not installed")
    return ET.parse(Path(vulkan_object.__file__).parent / "vk.xml").getroot()


def _c_type(member: ET.Element) -> tuple[str, str]:
    """(type spelled without whitespace, member name) of a <member> or <param>."""
    name = member.find("name").text
    text = "".join(member.itertext())
    comment = member.find("comment")
    if comment is not None:
        text = text.replace(comment.text, "")
    text = text.strip()
    text = text[: text.rindex(name)] + text[text.rindex(name) + len(name):]
    text = text.replace("VK_MAX_PHYSICAL_DEVICE_DATA_GRAPH_OPERATION_SET_NAME_SIZE_ARM", "128")
    return re.sub(r"\s+", "", text), name


STRUCTS = [name for name in re.findall(r"typedef struct (Vk\w+) \{", _ffi.CDEF)
           if name not in ("VkMemoryRequirements", "VkMemoryRequirements2")]


@pytest.mark.parametrize("struct", STRUCTS)
def test_struct_members_match_registry(registry, struct):
    node = registry.find(f"types/type[@name='{struct}']")
    assert node is not None, f"{struct} is not in vk.xml"
    members = [m for m in node.findall("member") if m.get("api") in (None, "vulkan")]
    want = [_c_type(m) for m in members]
    got = ffi.typeof(struct).fields
    assert [n for _, n in want] == [n for n, _ in got]
    for (wtype, wname), (_, field) in zip(want, got):
        base = wtype.replace("const", "").replace("*", "").split("[")[0]
        expect = ffi.typeof(base) if base not in ("void", "char") else None
        if "[" in wtype:
            assert field.type.kind == "array" and field.type.length == int(wtype.split("[")[1].rstrip("]")), wname
        elif "*" in wtype:
            assert field.type.kind == "pointer", wname
            if expect is not None:
                assert field.type.item == expect, wname
        else:
            assert field.type == expect, f"{struct}.{wname}: {field.type.cname} vs {wtype}"


@pytest.mark.parametrize("name", _ffi.DEVICE_FUNCTIONS + _ffi.INSTANCE_FUNCTIONS)
def test_function_pointers_match_registry(registry, name):
    node = next(c for c in registry.iter("command")
                if c.find("proto") is not None and c.find("proto/name").text == name)
    params = [p for p in node.findall("param") if p.get("api") in (None, "vulkan")]
    pfn = ffi.typeof(f"PFN_{name}")
    assert len(pfn.args) == len(params)
    for param, arg in zip(params, pfn.args):
        wtype, pname = _c_type(param)
        base = wtype.replace("const", "").replace("*", "")
        expect = ffi.typeof(base) if base != "void" else None
        if "*" in wtype:
            assert arg.kind == "pointer", pname
            if expect is not None:
                assert arg.item == expect, pname
        else:
            assert arg == expect, pname
    ret = node.find("proto/type").text
    assert pfn.result == (ffi.typeof(ret) if ret != "void" else ffi.typeof("void"))


def _enum_values(registry) -> dict[str, int]:
    """Every enum value of vk.xml: core <enums> blocks, and the <require> entries of features
    and extensions (offset form: 1000000000 + (extension number - 1) * 1000 + offset)."""
    values = {}

    def add(enum: ET.Element, number: int) -> None:
        name = enum.get("name")
        if enum.get("offset") is not None:
            ext = int(enum.get("extnumber", number))
            value = 1000000000 + (ext - 1) * 1000 + int(enum.get("offset"))
            values[name] = -value if enum.get("dir") == "-" else value
        elif enum.get("bitpos") is not None:
            values[name] = 1 << int(enum.get("bitpos"))
        elif enum.get("value") is not None:
            try:
                values[name] = int(enum.get("value"), 0)
            except ValueError:
                pass

    for enums in registry.findall("enums"):
        for enum in enums.findall("enum"):
            add(enum, 0)
    for parent in list(registry.iter("feature")) + list(registry.iter("extension")):
        for enum in parent.iter("enum"):
            add(enum, int(parent.get("number", 0)) if parent.tag == "extension" else 0)
    return values


CONSTANTS = [n for n in dir(_ffi) if n.isupper() and not n.startswith(("EXT_", "CDEF", "DEVICE_", "INSTANCE_"))]


@pytest.mark.parametrize("name", CONSTANTS)
def test_enum_values_match_registry(registry, name):
    values = _enum_values(registry)
    key = "VK_" + name
    assert key in values, f"{key} not in vk.xml"
    assert getattr(_ffi, name) == values[key]
