"""The reference backend: the cpu backend (cpu.py) on the plain numpy interpreter of
pyvgf/tosa/, whatever is installed; pyvgf.testing checks the other backends against it."""

from .cpu import request_reference_adapter as request_adapter

__all__ = ["request_adapter"]
