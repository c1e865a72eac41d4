"""Helpers of the runtime tests."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np


def check_threads(model, make_inputs: Callable[[np.random.Generator], list[np.ndarray]],
                  threads: int = 6, runs: int = 8) -> None:
    """Run `model` from several threads at once on different inputs; every result must equal
    the one a sequential run gave for the same inputs."""
    rng = np.random.default_rng(0)
    cases = [make_inputs(rng) for _ in range(threads * runs)]
    expected = [model.run(c) for c in cases]
    got: dict[int, list[np.ndarray]] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(threads)

    def worker(t: int) -> None:
        try:
            barrier.wait()
            for i in range(t, len(cases), threads):
                got[i] = model.run(cases[i])
        except BaseException as exc:  # re-raised below, in the test's thread
            errors.append(exc)

    pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert not errors, errors
    assert sorted(got) == list(range(len(cases)))
    for i, outs in enumerate(expected):
        for a, b in zip(outs, got[i]):
            np.testing.assert_array_equal(a, b)


def doubling_shader() -> np.ndarray:
    """The SPIR-V 1.3 compute shader of tests/models/runtime_segments.mlir, assembled here so that
    the base64 there can be checked: local size 1; set 0 binding 0 and binding 1 are storage
    buffers of floats; `out[gid.x] = 2 * in[gid.x]` (GLSL: std430 buffers, no bounds check)."""
    ids = iter(range(1, 100))
    (void, fn, uint, f32, v3, p_in_v3, gid, rta, block, p_sb_block, src, dst, p_sb_f32, p_in_u32,
     c0, c2, main, label, px, x, pa, a, b, pb) = (next(ids) for _ in range(24))

    def op(code: int, *operands: int) -> list[int]:
        return [code | (len(operands) + 1) << 16, *operands]

    main_name = [int.from_bytes(b"main", "little"), 0]
    words = [0x07230203, 0x00010300, 0, 25, 0]
    words += op(17, 1)  # OpCapability Shader
    words += op(14, 0, 1)  # OpMemoryModel Logical GLSL450
    words += op(15, 5, main, *main_name, gid)  # OpEntryPoint GLCompute %main "main" %gid
    words += op(16, main, 17, 1, 1, 1)  # OpExecutionMode %main LocalSize 1 1 1
    words += op(71, gid, 11, 28)  # OpDecorate %gid BuiltIn GlobalInvocationId
    words += op(71, rta, 6, 4)  # OpDecorate %rta ArrayStride 4
    words += op(72, block, 0, 35, 0)  # OpMemberDecorate %block 0 Offset 0
    words += op(71, block, 2)  # OpDecorate %block Block
    for var, binding in ((src, 0), (dst, 1)):
        words += op(71, var, 34, 0) + op(71, var, 33, binding)  # DescriptorSet 0, Binding n
    words += op(19, void) + op(33, fn, void) + op(21, uint, 32, 0) + op(22, f32, 32)
    words += op(23, v3, uint, 3) + op(32, p_in_v3, 1, v3) + op(59, p_in_v3, gid, 1)
    words += op(29, rta, f32) + op(30, block, rta) + op(32, p_sb_block, 12, block)
    words += op(59, p_sb_block, src, 12) + op(59, p_sb_block, dst, 12)
    words += op(32, p_sb_f32, 12, f32) + op(32, p_in_u32, 1, uint)
    words += op(43, uint, c0, 0) + op(43, f32, c2, 0x40000000)  # 0u, 2.0f
    words += op(54, void, main, 0, fn) + op(248, label)
    words += op(65, p_in_u32, px, gid, c0) + op(61, uint, x, px)  # x = gl_GlobalInvocationID.x
    words += op(65, p_sb_f32, pa, src, c0, x) + op(61, f32, a, pa)  # a = in[x]
    words += op(133, f32, b, a, c2)  # b = a * 2.0
    words += op(65, p_sb_f32, pb, dst, c0, x) + op(62, pb, b)  # out[x] = b
    words += op(253) + op(56)  # OpReturn, OpFunctionEnd
    return np.array(words, np.uint32)
