"""Python stand-ins for the scenario tests' compute shaders; `pyvgf scenario --shaders` reads
SHADERS from this file (by VGF compute module name, as model-converter names it, or scenario shader uid)."""

import numpy as np


def double(resources, workgroups) -> None:
    """The doubling shader of tests/support/runtime.py: out[x] = 2 * in[x], one per workgroup."""
    n = workgroups[0]
    src, dst = resources[(0, 0)], resources[(0, 1)]
    src = src.view(np.float32) if src.dtype == np.uint8 else src.reshape(-1)
    dst = dst.view(np.float32) if dst.dtype == np.uint8 else dst.reshape(-1)
    dst[:n] = 2 * src[:n]


SHADERS = {"graph_partition_1": double, "double": double}
