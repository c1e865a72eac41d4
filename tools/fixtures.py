"""Real VGF fixtures: TOSA MLIR converted by Arm's model-converter, cached by content.

    python tools/fixtures.py tests/models/*.mlir     # build (or reuse) every fixture

`vgf_from_mlir(path)` returns the cached .vgf for an MLIR file, `tosa_from_mlir(path)` the TOSA
FlatBuffer that `tosa_reference_model` runs. The cache key is the MLIR text and the converter's
version, so an edited model or a new converter rebuilds; nothing stale is ever used.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("PYVGF_FIXTURE_CACHE", ROOT / ".cache" / "fixtures"))
MODELS = ROOT / "tests" / "models"
REAL = ROOT / "tests" / "fixtures" / "real"
"""The real models made by Arm's tools elsewhere (see its README.md for provenance and licence)."""
REAL_MODELS = {"mobilenet_v2": REAL / "mobilenet_v2_int8.vgf", "vww4": REAL / "vww4_int8.vgf"}
"""The real int8 models of REAL by name (never modified)."""


class ToolMissing(RuntimeError):
    """An Arm tool is not installed (install the `test` extra)."""


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ToolMissing(f"{name} not found on PATH: pip install -e '.[test]'")
    return path


@functools.cache
def converter_version() -> str:
    out = subprocess.run([tool("model-converter"), "--version"], capture_output=True, text=True)
    return (out.stdout + out.stderr).strip()


def _convert(mlir: str | Path, suffix: str, extra: list[str]) -> Path:
    text = Path(mlir).read_text() if isinstance(mlir, Path) or "\n" not in str(mlir) else str(mlir)
    key = hashlib.sha256(f"{converter_version()}\0{extra}\0{text}".encode()).hexdigest()[:24]
    out = CACHE / f"{key}{suffix}"
    if out.exists():
        return out
    CACHE.mkdir(parents=True, exist_ok=True)
    src = CACHE / f"{key}.mlir"
    src.write_text(text)
    tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
    proc = subprocess.run(
        [tool("model-converter"), *extra, "-i", str(src), "-o", str(tmp)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0 or not tmp.exists():
        raise RuntimeError(f"model-converter failed on {mlir}:\n{proc.stdout}\n{proc.stderr}")
    tmp.replace(out)
    return out


def vgf_from_mlir(mlir: str | Path, *extra: str) -> Path:
    """The VGF that model-converter makes from TOSA MLIR (a path or the text itself)."""
    return _convert(mlir, ".vgf", list(extra))


def tosa_from_mlir(mlir: str | Path) -> Path:
    """The TOSA FlatBuffer of the same MLIR, for tosa_reference_model."""
    return _convert(mlir, ".tosa", ["--tosa-flatbuffer"])


def model(name: str) -> Path:
    """The VGF of tests/models/NAME.mlir."""
    return vgf_from_mlir(MODELS / f"{name}.mlir")


def main(argv: list[str]) -> int:
    for arg in argv or sorted(map(str, MODELS.glob("*.mlir"))):
        print(vgf_from_mlir(Path(arg)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
