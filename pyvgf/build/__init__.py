"""Write VGF files directly from Python: declare inputs, TOSA operators, constants, outputs.

    from pyvgf.build import Graph
    g = Graph()
    a, b = g.input("float32", (1, 4)), g.input("float32", (1, 4))
    g.output(g.op("ADD", input1=a, input2=b))
    open("add.vgf", "wb").write(g.to_bytes())
"""

from __future__ import annotations

from .graph import Graph, TensorSpec, Value

__all__ = ["Graph", "TensorSpec", "Value"]
