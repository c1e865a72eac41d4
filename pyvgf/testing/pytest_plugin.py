"""pytest plugin for testing VGF backends: a `vgf_backend` fixture and hypothesis profiles.

One line enables it, in conftest.py:  pytest_plugins = ["pyvgf.testing.pytest_plugin"]
(installed with the `pytest11` entry point, it is enabled wherever pyvgf is installed, so it
imports nothing but pytest: hypothesis loads only when one of its profiles is asked for).

  * `vgf_backend`: every test that takes it runs once per backend: `--vgf-backend NAME`
    (repeatable) or the ini option `vgf_backends = cpu vulkan`; default `cpu`.
  * hypothesis profiles "fast" (25 examples, for every run) and "long" (1000 examples, for
    nightly runs): choose with `--hypothesis-profile=long`, or the ini option
    `vgf_hypothesis_profile = fast`.
"""

from __future__ import annotations

import pytest

PROFILES = {"fast": 25, "long": 1000}
"""Profile name -> examples per test."""


def register_profiles() -> None:
    """Register the "fast" and "long" hypothesis profiles (UsageError without hypothesis)."""
    try:
        from hypothesis import HealthCheck, settings
    except ImportError:
        raise pytest.UsageError("the hypothesis profiles of pyvgf need hypothesis: pip install hypothesis") from None
    for name, examples in PROFILES.items():
        settings.register_profile(
            name,
            max_examples=examples,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pyvgf", "testing VGF backends")
    group.addoption(
        "--vgf-backend",
        action="append",
        dest="vgf_backends",
        metavar="NAME",
        help="run tests that take `vgf_backend` on this backend (repeatable; default: cpu)",
    )
    parser.addini("vgf_backends", "backends the vgf_backend fixture runs over", type="args", default=["cpu"])
    parser.addini("vgf_hypothesis_profile", "hypothesis profile to load (fast, long)", default="")


@pytest.hookimpl(tryfirst=True)  # before hypothesis's own plugin loads --hypothesis-profile
def pytest_configure(config: pytest.Config) -> None:
    chosen = config.getoption("hypothesis_profile", default=None)
    profile = config.getini("vgf_hypothesis_profile")
    if chosen in PROFILES or profile:
        register_profiles()
    if profile and not chosen:
        from hypothesis import settings

        settings.load_profile(profile)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "vgf_backend" in metafunc.fixturenames:
        backends = metafunc.config.getoption("vgf_backends") or metafunc.config.getini("vgf_backends")
        metafunc.parametrize("vgf_backend", backends)
