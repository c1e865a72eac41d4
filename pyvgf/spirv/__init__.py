"""SPIR-V graph modules: binary decoding, the graph IR and a disassembler.

    graph = decode_graph(words)      # the Graph of the module's (only) graph entry point
    text = disassemble(words)        # readable text for `pyvgf inspect FILE --spirv N`
    counts = tosa_op_counts(words)   # TOSA operator name -> how many times the module applies it
"""

from .binary import Instruction, Module, Operand, decode, local_size
from .disasm import disassemble, tosa_op_counts
from .graph import Const, Graph, GraphConstant, GraphInterface, Input, Node, Result, decode_graph

__all__ = [
    "Const",
    "Graph",
    "GraphConstant",
    "GraphInterface",
    "Input",
    "Instruction",
    "Module",
    "Node",
    "Operand",
    "Result",
    "decode",
    "decode_graph",
    "disassemble",
    "local_size",
    "tosa_op_counts",
]
