"""Shared test fixtures: real VGF files made by Arm's model-converter, and the real models.

pytest's `pythonpath` (pyproject.toml) puts tests/ and tools/ on sys.path: the helpers are
imported as `support.<name>` (tests/support/) and the tools by name (`fixtures`, `references`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import fixtures  # tools/fixtures.py

pytest_plugins = ["support.vulkan"]  # the `adapter` and `device` fixtures of the Vulkan tests

REAL_MODELS = fixtures.REAL_MODELS


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
