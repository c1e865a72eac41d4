"""The exceptions pyvgf raises: each names what is wrong and where."""

from __future__ import annotations


class VGFError(Exception):
    """Base class of every error pyvgf raises on purpose."""


class VGFFormatError(VGFError):
    """A VGF container is malformed: the message names the section and byte offset."""

    def __init__(self, message: str, *, section: str | None = None, offset: int | None = None):
        self.section = section
        self.offset = offset
        where = []
        if section is not None:
            where.append(f"section {section}")
        if offset is not None:
            where.append(f"byte offset {offset}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)


class SpirvError(VGFError):
    """A SPIR-V module is malformed or uses something pyvgf does not know (names the word offset)."""

    def __init__(self, message: str, *, word: int | None = None):
        self.word = word
        super().__init__(f"{message} (word {word})" if word is not None else message)


class TosaError(VGFError):
    """A TOSA operator's operands or attributes break the specification (names node and operand)."""


class ModelInputError(VGFError, ValueError):
    """Inputs given to Model.run() do not match the model (names the input, expected vs got)."""


class HalError(VGFError):
    """Wrong use of the Vulkan-shaped object layer, or a backend failure."""


class ScenarioError(VGFError):
    """A scenario file is malformed, refers to what it lacks, or asks for what pyvgf does not
    support: the message starts with the JSON path of the entry (`commands[2].dispatch_compute`)."""

    def __init__(self, message: str, *, path: str = ""):
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class ProgramFormatError(VGFFormatError):
    """An ExecuTorch program (.pte) is malformed: the message names the part and byte offset."""


class ProgramError(VGFError):
    """An ExecuTorch program uses something pyvgf does not run (names the instruction and kernel)."""
