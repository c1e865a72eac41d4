"""The budgets that bound the work and memory a model file can ask of pyvgf.

Every size a file declares (tensor types, resource shapes, broadcast constants) is checked
against these before anything is allocated, so a small hostile file gets a clear pyvgf error at
load instead of a MemoryError, numpy's ValueError or a process killed for memory.
"""

from __future__ import annotations

import os

MAX_RANK = 32
"""The most dimensions a tensor may have: numpy's limit (1.x; 2.x allows 64), and far beyond
TOSA 1.0's (6 at level 8K) and any Vulkan device's maxTensorDimensionCount."""


def memory_budget() -> int:
    """The most bytes one model may declare: one tensor, a graph's results together, or the
    resources it binds together. The machine's physical memory, or the environment variable
    PYVGF_MEMORY_BUDGET (bytes) when set."""
    given = os.environ.get("PYVGF_MEMORY_BUDGET")
    if given:
        return int(given)
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX: a conservative 16 GiB
        return 16 << 30


def materialized_budget(module_bytes: int) -> int:
    """The most bytes of constant data a SPIR-V module of `module_bytes` may make concrete
    (composites built from other constants): 16 MiB plus 64 bytes per byte of the module.
    Nulls and replicated composites stay lazy (numpy broadcasts) and cost nothing here."""
    return (16 << 20) + 64 * module_bytes
