"""SPIR-V graph modules: binary decoding, the graph IR and a disassembler."""
