"""TOSA 1.0 conformance: Arm's generated per-op cases through pyvgf (tools/tosa_conformance.py).

By default a fast selection (one small case per op and type permutation, generated once and
cached under .cache/conformance); `pytest -m slow` runs the conformance suite's own selection.
"""

from __future__ import annotations

import numpy as np
import pytest
import tosa_conformance as tc  # tools/tosa_conformance.py (tests/conftest.py puts tools/ on sys.path)


def _by_op(selection: str) -> dict[str, list[tc.Case]]:
    by_op: dict[str, list[tc.Case]] = {}
    for case in tc.cases(tc.generate(selection)):
        by_op.setdefault(case.op, []).append(case)
    return by_op


@pytest.fixture(scope="session")
def fast_cases() -> dict[str, list[tc.Case]]:
    return _by_op("fast")


@pytest.fixture(scope="session")
def full_cases() -> dict[str, list[tc.Case]]:
    return _by_op("full")


def _check(op_cases: list[tc.Case], op: str) -> None:
    if not op_cases:
        pytest.skip(f"tosa_verif_build_tests makes no TOSA 1.0 case for {op}")
    outcomes = [tc.run_case(case) for case in op_cases]
    bad = [o for o in outcomes if o.status in (tc.FAIL, tc.ERROR)]
    if bad:
        pytest.fail("\n".join(f"{o.case.name} [{o.case.dtypes}]: {o.message}" for o in bad))
    if all(o.status == tc.REJECTED for o in outcomes):
        pytest.skip(f"model-converter rejects every {op} case: {outcomes[0].message}")
    assert any(o.status == tc.PASS for o in outcomes), [o.message for o in outcomes]


@pytest.mark.parametrize("op", tc.tosa_ops())
def test_op_fast(fast_cases: dict[str, list[tc.Case]], op: str) -> None:
    _check(fast_cases.get(op, []), op)


@pytest.mark.slow
@pytest.mark.parametrize("op", tc.tosa_ops())
def test_op_full(full_cases: dict[str, list[tc.Case]], op: str) -> None:
    _check(full_cases.get(op, []), op)


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
