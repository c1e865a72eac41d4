"""Shared test fixtures: real VGF files made by Arm's model-converter, and the real models."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import fixtures  # noqa: E402  (tools/fixtures.py)

REAL = fixtures.REAL
REAL_MODELS = {"mobilenet_v2": REAL / "mobilenet_v2_int8.vgf", "vww4": REAL / "vww4_int8.vgf"}
MODELS = fixtures.MODELS


@pytest.fixture(scope="session")
def vgf_model():
    """vgf_model("name") -> Path of the VGF made from tests/models/name.mlir (cached)."""
    return fixtures.model


@pytest.fixture(scope="session", params=sorted(REAL_MODELS))
def real_model(request) -> Path:
    """Each real int8 model of tests/fixtures/real/ (never modified)."""
    path = REAL_MODELS[request.param]
    if not path.exists():
        pytest.fail(f"{path} is missing: the real fixtures live in tests/fixtures/real/")
    return path


def pytest_configure(config):
    """The fast executor's plans compile a loop missing from numba's cache at its first call,
    so that every test of them runs the compiled loops, even on a machine's first test run
    (by default a plan runs the reference until a compiler process has compiled them:
    tests/test_fast_background.py tests that, in processes of its own)."""
    from pyvgf import fast

    fast.set_background_compile(False)


def pytest_collection_modifyitems(config, items):
    """Tests marked `fast` need the fast executor: skipped, saying why, where its extra is not
    installed (the core-only run of .ci/run)."""
    from pyvgf import fast

    if fast.available():
        return
    skip = pytest.mark.skip(reason=f"needs the fast executor: pip install 'pyvgf[fast]' "
                                   f"({', '.join(fast.missing())} not installed)")
    for item in items:
        if "fast" in item.keywords:
            item.add_marker(skip)
