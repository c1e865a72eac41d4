"""TRANSPOSE and SLICE as views (pyvgf/fast/layout.py), and the batched GEMM reading such views
with their strides (kernels.gemm -> compiled.gemm_batch)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba", reason="the fast executor needs the fast extra: pip install 'pyvgf[fast]'")

from pyvgf.fast import compiled, kernels, layout, threads
from pyvgf.tosa import OPS

pytestmark = pytest.mark.fast


def test_transpose_and_slice_are_views_with_the_references_values():
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    perms, start, size = np.array([2, 0, 3, 1]), np.array([1, 0, 1, 2]), np.array([1, 3, 2, 3])
    for fast, reference, operands in (
            (layout.transpose, OPS["TRANSPOSE"].fn, {"perms": perms}),
            (layout.slice_view, OPS["SLICE"].fn, {"start": start, "size": size})):
        got = fast(input1=x, **operands)
        np.testing.assert_array_equal(got, reference(input1=x, **operands))
        assert np.shares_memory(got, x)


def test_shape_operands_are_read_once_at_plan_time_where_they_are_known():
    """TRANSPOSE, SLICE and RESHAPE's plan-time forms give the reference's values; SLICE and
    RESHAPE with a shape operand made at run time (given as its type) run as they are."""
    from pyvgf.fast.registry import fast_ops
    from pyvgf.types import TensorType

    ops = fast_ops(OPS)
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    t = TensorType(x.dtype, x.shape)
    for op, operands in (("TRANSPOSE", {"perms": np.array([2, 0, 3, 1])}),
                         ("SLICE", {"start": np.array([1, 0, 1, 2]), "size": np.array([1, 3, 2, 3])}),
                         ("RESHAPE", {"shape": np.array([6, 20])})):
        prepared = ops[op].prepare(input1=t, **operands)
        np.testing.assert_array_equal(prepared(input1=x), OPS[op].fn(input1=x, **operands))
    made = TensorType(np.dtype(np.int64), (4,))
    assert ops["SLICE"].prepare(input1=t, start=made, size=np.array([1, 3, 2, 3])) is None
    assert ops["RESHAPE"].prepare(input1=t, shape=TensorType(np.dtype(np.int64), (2,))) is None


def test_a_batch_of_head_views_is_multiplied_where_it_lies(monkeypatch):
    """Q [6, 197, 64] and K transposed [6, 64, 197], views of one QKV tensor as a transformer's
    attention reads them: gemm_batch takes them as they are, and gives numpy's product."""
    if not threads.spread():
        pytest.skip("the batch splits over threads only where there are several")
    called: list[bool] = []
    real = compiled.gemm_batch
    monkeypatch.setattr(kernels, "gemm_batch", lambda a, b, out: called.append(True) or real(a, b, out))
    rng = np.random.default_rng(3)
    qkv = rng.integers(-8, 8, (197, 3, 6, 64)).astype(np.float32)
    heads = layout.transpose(input1=qkv, perms=np.array([1, 2, 0, 3]))
    q, k = heads[0], heads[1]
    k_t = layout.transpose(input1=k, perms=np.array([0, 2, 1]))
    assert not q.flags.c_contiguous and not k_t.flags.c_contiguous
    np.testing.assert_array_equal(kernels.gemm(q, k_t), np.matmul(q, k_t))
    assert called == [True]
