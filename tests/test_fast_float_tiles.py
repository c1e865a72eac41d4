"""The fp32 FMA tiles of the fast executor's 1x1 convolutions (compiled._finished_product):
where they take a product, and that they give what BLAS and the finish pass give."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba", reason="the fast executor needs the fast extra: pip install 'pyvgf[fast]'")

from pyvgf.fast import compiled

pytestmark = pytest.mark.fast

needs_tiles = pytest.mark.skipif(not compiled.FLOAT_TILES, reason="numba compiles for AVX-512 or without FMA here")


def _blas_and_finish(x, w, bias, low, high, nan_to_low, residual):
    out = np.empty((x.shape[0], w.shape[1]), np.float32)
    compiled._gemm(x, w, out)
    compiled._finish_rows(out, bias, low, high, nan_to_low, residual)
    return out


def _tiles(x, w, bias, low, high, nan_to_low, residual):
    out = np.empty((x.shape[0], w.shape[1]), np.float32)
    assert compiled._tiles_take(x, w, out, bias, low, high, residual)
    compiled._finished_product(x, w, out, bias, low, high, nan_to_low, residual)
    return out


def _integers(rng, shape, special=()):
    """fp32 small integers, so that every sum is exact whatever its order, with `special`
    values scattered in."""
    a = rng.integers(-8, 9, shape).astype(np.float32)
    flat = a.reshape(-1)
    for value in special:
        flat[rng.integers(0, flat.size, max(1, flat.size // 50))] = value
    return a


@needs_tiles
@pytest.mark.parametrize("m, k, n", [(96, 16, 96), (101, 16, 96), (97, 24, 144), (100, 96, 24),
                                     (120, 384, 8), (96, 1, 16), (203, 32, 40)])
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("by_columns", [False, True])
def test_the_tiles_give_blas_and_the_finishs_results(m, k, n, residual, by_columns):
    """Every shape of the tiles (six rows or one, two groups of eight columns or one, rows
    past a block of _FLOAT_BLOCK), + a residual or not, x laid out by rows or by columns (a
    transposed view, as conv_blocks's patches): the same values as BLAS's product and the
    finish pass, for sums that are exact in fp32."""
    rng = np.random.default_rng(m * k * n)
    x, w = _integers(rng, (m, k)), _integers(rng, (k, n))
    if by_columns:
        x = np.asfortranarray(x)
    bias = _integers(rng, n)
    y = _integers(rng, (m, n)) if residual else np.empty((0, n), np.float32)
    for low, high in ((0.0, 6.0), (-np.inf, np.inf), (np.float32(-3.5), np.float32(20.0))):
        want = _blas_and_finish(x, w, bias, low, high, False, y)
        np.testing.assert_array_equal(_tiles(x, w, bias, low, high, False, y), want)


@needs_tiles
@pytest.mark.parametrize("nan_to_low", [False, True])
def test_nan_and_infinities_are_finished_as_the_finish_pass_does(nan_to_low):
    """NaN and infinite inputs: NaN stays NaN (or becomes low: nan_to_low), an infinity is
    clamped, inf - inf is NaN, as _bias_clamp_row does."""
    rng = np.random.default_rng(7)
    x = _integers(rng, (102, 24), special=(np.nan, np.inf, -np.inf))
    w, bias = _integers(rng, (24, 32)), _integers(rng, 32)
    y = np.empty((0, 32), np.float32)
    want = _blas_and_finish(x, w, bias, 0.0, 6.0, nan_to_low, y)
    assert np.isnan(want).any() != nan_to_low
    np.testing.assert_array_equal(_tiles(x, w, bias, 0.0, 6.0, nan_to_low, y), want)


def test_the_tiles_take_only_narrow_products_of_enough_rows():
    """Products of at most 32 input or output channels, at most 384 input channels, 96 rows,
    columns in eights, C-contiguous arrays (x by columns too), a bias per column and fp32
    bounds; others go to BLAS."""
    def takes(m, k, n, low=0.0, w_transposed=False):
        x = np.zeros((m, k), np.float32)
        w = np.zeros((n, k), np.float32).T if w_transposed else np.zeros((k, n), np.float32)
        out = np.zeros((m, n), np.float32)
        return bool(compiled._tiles_take(x, w, out, np.zeros(n, np.float32), low, 6.0, out[:0]))

    tiles = compiled.FLOAT_TILES
    assert takes(12544, 16, 96) is tiles and takes(3136, 144, 24) is tiles
    assert not takes(197, 384, 1152)  # wide: its weights outgrow L2
    assert not takes(196, 64, 384)
    assert not takes(49, 160, 32)  # few rows
    assert not takes(200, 512, 24)  # deep
    assert not takes(200, 16, 20)  # columns not in eights
    assert not takes(200, 16, 96, w_transposed=True)
    w, out, bias, none = (np.zeros(shape, np.float32) for shape in ((32, 96), (200, 96), 96, (0, 96)))
    for x in (np.zeros((200, 64), np.float32)[:, ::2],  # no unit stride
              np.zeros((200, 32), np.float32)[::-1]):  # rows backwards
        assert not compiled._tiles_take(x, w, out, bias, 0.0, 6.0, none)
    assert not compiled._tiles_take(np.zeros((200, 32), np.float32), w, out, bias[:95], 0.0, 6.0, none)
    assert not takes(200, 16, 96, low=0.1)  # not an fp32 value


@pytest.mark.parametrize("features, cpu, tiles", [
    ({"avx2", "fma"}, "znver3", True),
    ({"avx2", "fma"}, "haswell", True),
    ({"avx2", "fma", "avx512f"}, "cascadelake", False),
    ({"avx2", "fma", "avx512f"}, "znver4", True),
    ({"avx2"}, "znver4", False),
    (set(), "", False),
])
def test_the_tiles_run_with_avx2_and_fma_but_not_intels_avx512(features, cpu, tiles):
    assert compiled._float_tiles(features, cpu) is tiles


@pytest.mark.parametrize("features, cpu, lanes", [
    ({"avx2", "fma"}, "znver3", 8),
    ({"avx2", "fma", "avx512f"}, "znver4", 16),
    ({"avx2", "fma", "avx512f"}, "cascadelake", 8),  # (no tiles there)
])
def test_a_wide_tile_holds_a_row_in_one_vector_with_amds_avx512(features, cpu, lanes):
    assert compiled._row_lanes(features, cpu) == lanes


def test_panels_hold_the_weights_columns_sixteen_at_a_time():
    w = np.arange(5 * 40, dtype=np.float32).reshape(5, 40)
    panels = compiled.float_panels(w)
    assert panels.shape == (3, 5, compiled.PANEL)
    np.testing.assert_array_equal(panels[1], w[:, 16:32])
    np.testing.assert_array_equal(panels[2, :, :8], w[:, 32:])
    assert not panels[2, :, 8:].any()


@needs_tiles
@pytest.mark.parametrize("m, k, n", [(49, 160, 960), (1, 1280, 1000), (7, 24, 8), (200, 96, 24),
                                     (101, 16, 40)])
@pytest.mark.parametrize("blocks, groups", [(1, 1), (3, 1), (1, 2), (2, 3)])
@pytest.mark.parametrize("threaded", [False, True])
def test_products_by_panels_give_blas_and_the_finishs_results(m, k, n, blocks, groups, threaded):
    """gemm_panels over blocks of rows times groups of panels, with a residual or none, one or
    many rows, columns past the last whole panel: BLAS's product and the finish pass's
    values, for sums exact in fp32."""
    rng = np.random.default_rng(m + k + n)
    x, w, bias = _integers(rng, (m, k)), _integers(rng, (k, n)), _integers(rng, n)
    panels = compiled.float_panels(w)
    loop = compiled.gemm_panels.threaded if threaded else compiled.gemm_panels.serial
    for y in (np.empty((0, n), np.float32), _integers(rng, (m, n))):
        want = _blas_and_finish(x, w, bias, 0.0, 6.0, False, y)
        out = np.full((m, n), np.nan, np.float32)
        loop(x, panels, out, blocks, groups, bias, np.float32(0), np.float32(6), False, y)
        np.testing.assert_array_equal(out, want)
