"""The `pyvgf` command line: one small function per subcommand."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from .errors import VGFError


def _inspect(args: argparse.Namespace) -> int:
    from .format import CodeType, read
    from .format.dump import summary, to_json

    vgf = read(args.file)
    if args.dump_spirv is not None or args.dump_constant is not None:
        if args.output is None:
            raise SystemExit("pyvgf inspect: --dump-spirv/--dump-constant need -o FILE")
        out = Path(args.output)
        if args.dump_spirv is not None:
            index = _checked_index(args.dump_spirv, len(vgf.modules), "module")
            module = vgf.modules[index]
            if module.code_type != CodeType.SPIRV or module.code is None:
                raise VGFError(f"module {index} has no stored SPIR-V code")
            out.write_bytes(np.asarray(module.code, dtype="<u4").tobytes())
        else:
            index = _checked_index(args.dump_constant, len(vgf.constants), "constant")
            if out.suffix == ".npy":
                array = vgf.constant_array(index)
                if array.dtype.kind == "V":
                    print(
                        f"pyvgf inspect: .npy has no {array.dtype} type; saving its bit pattern as "
                        f"uint{8 * array.dtype.itemsize} (view it with ml_dtypes.{array.dtype})",
                        file=sys.stderr,
                    )
                    array = array.view(f"<u{array.dtype.itemsize}")
                np.save(out, array)
            else:
                out.write_bytes(vgf.constants[index].data.tobytes())
        return 0
    if args.json:
        print(json.dumps(to_json(vgf), indent=4, sort_keys=True, ensure_ascii=False))
    else:
        print(summary(vgf))
    return 0


def _checked_index(index: int, count: int, what: str) -> int:
    if not 0 <= index < count:
        raise VGFError(f"{what} index {index} out of range ({count} {what}s)")
    return index


def _add_inspect(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("inspect", help="describe a VGF file (summary, or vgf_dump's JSON)")
    p.add_argument("file", help="the .vgf file")
    p.add_argument("--json", action="store_true", help="print the JSON `vgf_dump -i FILE` prints")
    p.add_argument("--dump-spirv", type=int, metavar="N", help="write module N's SPIR-V words to -o FILE")
    p.add_argument(
        "--dump-constant", type=int, metavar="N", help="write constant N to -o FILE (.npy: typed array, else raw)"
    )
    p.add_argument("-o", "--output", help="output file of --dump-spirv / --dump-constant")
    p.set_defaults(func=_inspect)


def main(argv: list[str] | None = None) -> int:
    """Run the `pyvgf` command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="pyvgf", description="Inspect and run VGF models.")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_inspect(sub)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (VGFError, ValueError, OSError) as exc:
        print(f"pyvgf {args.command}: {exc}", file=sys.stderr)
        return 1
