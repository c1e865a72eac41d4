"""TOSA 1.0 conformance: Arm's generated per-op cases through pyvgf (tools/tosa_conformance.py).

The default suite runs the fast selection (one case per rank x type x ..., rank 0 and unsigned
RESCALE included; generated once and cached under .cache/conformance) of a few operators; the
`slow` tests run the fast selection of all 66 on cpu and on vulkan, and the conformance suite's
own selection on cpu.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tosa_conformance as tc  # tools/tosa_conformance.py

DEFAULT_OPS = ("ADD", "MUL", "TABLE")
"""The operators whose fast cases the default suite runs (the others are in the slow suite)."""


def _by_op(selection: str, ops: str | None = None) -> dict[str, list[tc.Case]]:
    by_op: dict[str, list[tc.Case]] = {}
    for case in tc.cases(tc.generate(selection, ops, jobs=2)):
        by_op.setdefault(case.op, []).append(case)
    return by_op


@pytest.fixture(scope="session")
def fast_cases() -> dict[str, list[tc.Case]]:
    return _by_op("fast", "^(" + "|".join(op.lower() for op in DEFAULT_OPS) + ")$")


@pytest.fixture(scope="session")
def all_fast_cases() -> dict[str, list[tc.Case]]:
    return _by_op("fast")


@pytest.fixture(scope="session")
def full_cases() -> dict[str, list[tc.Case]]:
    return _by_op("full")


def _check(op_cases: list[tc.Case], op: str, backend: str = "cpu") -> None:
    if not op_cases:
        pytest.skip(f"tosa_verif_build_tests makes no TOSA 1.0 case for {op}")
    if backend == "vulkan":
        from support.vulkan import require_vulkan

        require_vulkan()
    outcomes = [tc.run_case(case, backend) for case in op_cases]
    bad = [o for o in outcomes if o.status in (tc.FAIL, tc.ERROR)]
    if bad:
        pytest.fail("\n".join(f"{o.case.name} [{o.case.dtypes}]: {o.message}" for o in bad))
    if all(o.status == tc.REJECTED for o in outcomes):
        pytest.skip(f"model-converter rejects every {op} case: {outcomes[0].message}")
    assert any(o.status == tc.PASS for o in outcomes), [o.message for o in outcomes]


@pytest.mark.parametrize("op", DEFAULT_OPS)
def test_op_fast(fast_cases: dict[str, list[tc.Case]], op: str) -> None:
    _check(fast_cases.get(op, []), op)


def test_fast_selection_has_rank0_cases(fast_cases: dict[str, list[tc.Case]]) -> None:
    assert {op for op, found in fast_cases.items() if any(c.rank0 for c in found)} == set(DEFAULT_OPS)


@pytest.mark.slow
@pytest.mark.parametrize("op", tc.tosa_ops())
def test_op_fast_all(all_fast_cases: dict[str, list[tc.Case]], op: str) -> None:
    _check(all_fast_cases.get(op, []), op)


@pytest.mark.slow
@pytest.mark.vulkan
@pytest.mark.parametrize("op", tc.tosa_ops())
def test_op_fast_all_vulkan(all_fast_cases: dict[str, list[tc.Case]], op: str) -> None:
    _check(all_fast_cases.get(op, []), op, "vulkan")


@pytest.mark.slow
@pytest.mark.parametrize("op", tc.tosa_ops())
def test_op_full(full_cases: dict[str, list[tc.Case]], op: str) -> None:
    _check(full_cases.get(op, []), op)


def test_generation_follows_the_conformance_suite() -> None:
    """Every generation group of our profiles/extensions, rank 0 and unsigned RESCALE included."""
    rescale = tc.batches("fast", "^rescale$")
    assert {b.profile_ext for b in rescale} == {"tosa-pro-int", "tosa-ext-int16"}
    assert any("0" in b.args[b.args.index("--target-rank"):] for b in rescale if "--target-rank" in b.args)
    criteria = {c for b in rescale for _, c in b.selections}
    assert all('"input_unsigned"' in c and '"output_unsigned"' in c for c in criteria)
    assert {op for b in tc.batches("fast") for op in b.ops} == {op.lower() for op in tc.tosa_ops()}


def test_fast_selection_has_every_fft_argument_the_generator_makes() -> None:
    """FFT2D's inverse and the FFTs' local_bound (which the conformance suite's own selection
    keeps every case for) each have a fast case of every value the generator gives them."""

    def arguments(selection: str) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for op, op_cases in _by_op(selection, "^(fft2d|rfft2d)$").items():
            found[op] = {re.search(r"(inverse\w+_)?lclbnd\d", c.name).group() for c in op_cases}
        return found

    fast = arguments("fast")
    assert fast == arguments("full")
    assert fast["RFFT2D"] == {"lclbnd0", "lclbnd1"}
    assert {a.split("_")[0] for a in fast["FFT2D"]} == {"inverseTrue", "inverseFalse"}


def test_tosa_ops_are_the_66_of_the_grammar() -> None:
    ops = tc.tosa_ops()
    assert len(ops) == 66 and ops[0] == "ARGMAX" and ops[-1] == "RESCALE"


def _case(fast_cases: dict[str, list[tc.Case]], op: str, data_type: str) -> tc.Case:
    for case in fast_cases.get(op, []):
        if case.desc["test_details"]["output_types"] == [data_type]:
            return case
    pytest.fail(f"the fast selection has no {op} case with a {data_type} result")


def test_verifier_judges_exact_results(fast_cases: dict[str, list[tc.Case]]) -> None:
    """The checker passes the reference's own integer result and fails it off by one."""
    case = _case(fast_cases, "ADD", "INT32")
    refs, _ = tc.reference(case)
    good = refs[0].astype(np.int32)
    assert tc.verify(case, [good]) is None
    bad = good.copy()
    bad.flat[0] += 1
    assert "not compliant" in tc.verify(case, [bad])


def test_verifier_judges_float_results_by_ulp(fast_cases: dict[str, list[tc.Case]]) -> None:
    """An fp32 result rounded from the fp64 reference passes; one that is 1% off fails."""
    case = _case(fast_cases, "ADD", "FP32")
    refs, _ = tc.reference(case)
    assert refs[0].dtype == np.float64
    good = refs[0].astype(np.float32)
    assert tc.verify(case, [good]) is None
    assert "not compliant" in tc.verify(case, [good * np.float32(1.01) + np.float32(1e-3)])
    assert "shape" in tc.verify(case, [good[..., None]])


def test_converter_makes_a_vgf_per_case(fast_cases: dict[str, list[tc.Case]]) -> None:
    import references

    case = _case(fast_cases, "ADD", "INT32")
    specs, outs = references.vgf_io(tc.convert(case))
    inputs = [np.load(case.path / f) for f in case.desc["ifm_file"]]
    assert [s.shape for s in specs] == [x.shape for x in inputs]
    assert [o.shape for o in outs] == [tuple(s) for s in case.desc["test_details"]["output_shapes"]]
