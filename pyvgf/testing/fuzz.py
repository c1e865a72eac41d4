"""Mutation fuzzing of everything in pyvgf that takes bytes, each case in a worker process.

    from pyvgf.testing import fuzz
    report = fuzz.campaign("load-cpu", seeds=[Path("model.vgf")], cases=1000, seed=0, out=Path("fuzz-out"))
    python tools/fuzz.py --target load-cpu --cases 100000 --out fuzz-out     # the same, with figures

A *target* is a function taking bytes. It must return, or raise a pyvgf error (`VGFError`: the
bytes were refused, clearly). Anything else is a failure: an *escape* (any other exception,
MemoryError included), a *crash* (the worker process ended by a signal or exited), a *hang* (no
answer within the time limit). Cases run in a worker process that answers many cases and is
started again after a failure, so a signal in one case is caught and reported, never taken by
the campaign. Every failing case's bytes are saved in `out` as a reproducer (NAME.bin, with
NAME.txt saying what happened and the worker's last stderr); `python tools/fuzz.py --replay
NAME.bin --target T` runs one again in the foreground.

Case `i` of a campaign is `mutate(seeds[i % len(seeds)], Random(f"{seed}:{i}"))`: the same
seed and corpus give the same cases on every machine.

Mutators: `mutate_vgf` (bytes of a VGF: bit flips, truncation, interesting 32/64-bit values,
header section fields, FlatBuffers offsets, inserted/deleted bytes; 7 in 8 aimed at the
header, tables and SPIR-V before the constant payload) and `mutate_spirv` (the words of one
SPIR-V module of a VGF: ids, word counts, opcodes, TOSA instruction numbers, operand counts,
constants, instruction order; the VGF is written again around them).

Adding an input (a .pte reader, scenario JSON): write `def fuzz_target(data: bytes) -> None` in
your module, which parses the bytes and uses the result, and add one entry:

    TARGETS["pte"] = Target("pyvgf.pte:fuzz_target", mutate_bytes)

(`module:function`, so that workers import it; `mutate_bytes` knows nothing of the format).
"""

from __future__ import annotations

import json
import os
import random
import resource
import select
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path

Mutator = Callable[[bytes, random.Random], bytes]

_INTERESTING32 = (0, 1, 2, 3, 4, 7, 8, 0xFF, 0x100, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE,
                  0xFFFFFFFF)
_INTERESTING64 = (0, 1, 2**31, 2**32, 2**63 - 1, 2**64 - 1)
_STARTUP_S = 600.0
_WALL_FACTOR = 10
"""A case is a hang after `timeout` seconds of the worker's CPU time, or this many times as
long in wall time (a deadlock uses no CPU)."""


# -- mutators ------------------------------------------------------------------------------------


def mutate_bytes(data: bytes, rng: random.Random, hot: int | None = None) -> bytes:
    """One to four generic byte mutations; 7 in 8 fall in the first `hot` bytes when given."""
    out = bytearray(data)
    for _ in range(rng.randrange(1, 5)):
        if not out:
            return bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
        end = hot if hot and hot < len(out) and rng.random() < 7 / 8 else len(out)
        at = rng.randrange(end)
        kind = rng.randrange(7)
        if kind == 0:
            out[at] ^= 1 << rng.randrange(8)
        elif kind == 1:
            out[at] = rng.randrange(256)
        elif kind == 2:
            at &= ~3
            value = rng.choice(_INTERESTING32 + (len(out), rng.randrange(1 << 32)))
            out[at : at + 4] = value.to_bytes(4, "little")
        elif kind == 3:
            at &= ~7
            value = rng.choice(_INTERESTING64 + (len(out),))
            out[at : at + 8] = value.to_bytes(8, "little")
        elif kind == 4:
            del out[rng.randrange(len(out)) :]
        elif kind == 5:
            del out[at : at + rng.choice((1, 4, 8, rng.randrange(1, 256)))]
        else:
            out[at:at] = out[at : at + rng.choice((1, 4, 8, rng.randrange(1, 256)))]
    return bytes(out)


def _constant_offset(data: bytes) -> int | None:
    """The offset of a VGF's constant section (its header's fourth entry), if it has one."""
    if len(data) < 80:
        return None
    offset = struct.unpack_from("<Q", data, 16 + 16 * 3)[0]
    return offset if 0 < offset <= len(data) else None


def mutate_vgf(data: bytes, rng: random.Random) -> bytes:
    """A mutation of a VGF file: header section fields and FlatBuffers offsets now and then,
    generic byte mutations aimed at what precedes the constant payload otherwise."""
    if len(data) >= 80 and rng.random() < 0.2:
        out = bytearray(data)
        if rng.random() < 0.5:  # a section's offset or size
            at = 16 + 8 * rng.randrange(8)
            value = rng.choice(_INTERESTING64 + (rng.randrange(len(data) + 1),))
            out[at : at + 8] = value.to_bytes(8, "little")
        else:  # a FlatBuffers root offset, or the root table's vtable offset
            (offset,) = struct.unpack_from("<Q", out, 16 + 16 * rng.randrange(3))
            if offset + 4 <= len(out):
                if rng.random() < 0.5:
                    where, value = offset, rng.choice((0, 2, 0xFFFFFFFC, 0x7FFFFFFF, 4 * rng.randrange(64)))
                else:
                    where = offset + struct.unpack_from("<I", out, offset)[0]
                    value = rng.choice((0, -4, 4, -0x7FFFFFFF, rng.randrange(-256, 256))) & 0xFFFFFFFF
                if where + 4 <= len(out):
                    out[where : where + 4] = value.to_bytes(4, "little")
        return bytes(out)
    constants = _constant_offset(data)
    return mutate_bytes(data, rng, hot=None if constants is None else constants + 64)


def _instructions(words: list[int]) -> list[tuple[int, int]]:
    """(start, word count) of each instruction after the header, as far as the counts hold."""
    out, pos = [], 5
    while pos < len(words):
        count = words[pos] >> 16
        if count == 0 or pos + count > len(words):
            break
        out.append((pos, count))
        pos += count
    return out


def mutate_words(words: list[int], rng: random.Random) -> list[int]:
    """One to three structural mutations of a SPIR-V module's words (header kept but the bound)."""
    from ..spirv import tables

    w = list(words)
    opcodes = sorted(tables.INSTRUCTIONS)
    tosa = sorted(tables.TOSA_INSTRUCTIONS)
    for _ in range(rng.randrange(1, 4)):
        insts = _instructions(w)
        if len(w) <= 5 or not insts:
            break
        bound = w[3] if len(w) > 3 else 1
        start, count = rng.choice(insts)
        kind = rng.randrange(12)
        if kind == 0:  # an interesting value anywhere
            at = rng.randrange(3, len(w))
            w[at] = rng.choice(_INTERESTING32 + (bound - 1, bound, bound + 1))
        elif kind == 1:  # another id of the module in an operand
            if count > 1:
                w[start + rng.randrange(1, count)] = rng.randrange(1, max(bound, 2))
        elif kind == 2:  # a wrong word count
            w[start] = (rng.choice((0, 1, count - 1, count + 1, 0xFFFF)) & 0xFFFF) << 16 | (w[start] & 0xFFFF)
        elif kind == 3:  # an instruction gone
            del w[start : start + count]
        elif kind == 4:  # an instruction twice
            w[start:start] = w[start : start + count]
        elif kind == 5:  # two instructions swapped
            other, n = rng.choice(insts)
            if other > start:
                start, count, other, n = other, n, start, count
            moved = w[start : start + count]
            del w[start : start + count]
            w[other:other] = moved
        elif kind == 6:  # another opcode, same operands
            w[start] = (w[start] & 0xFFFF0000) | rng.choice(opcodes)
        elif kind == 7:  # an extra operand: too many operands
            w[start] += 1 << 16
            w.insert(start + count, rng.choice((1, bound - 1, rng.randrange(1, max(bound, 2)))))
        elif kind == 8:  # another TOSA operator (OpExtInst's instruction number)
            ext = [(s, c) for s, c in insts if w[s] & 0xFFFF == 12 and c >= 5]
            if ext:
                s, _ = rng.choice(ext)
                w[s + 4] = rng.choice(tosa + [rng.randrange(1 << 16)])
        elif kind == 9:  # an OpConstant's value (shapes, axes, ranks, sizes)
            consts = [s for s, c in insts if w[s] & 0xFFFF == 43 and c >= 4]
            if consts:
                s = rng.choice(consts)
                w[s + 3] = rng.choice(_INTERESTING32 + (rng.randrange(-8, 64) & 0xFFFFFFFF,))
        elif kind == 10:  # the id bound
            w[3] = rng.choice((0, 1, bound - 1, bound + 1, 0x400000, 0xFFFFFFFF))
        else:  # an operand dropped: too few operands
            if count > 1:
                del w[start + count - 1]
                w[start] -= 1 << 16
    return w


def mutate_spirv(data: bytes, rng: random.Random) -> bytes:
    """The VGF `data` with the words of one of its SPIR-V modules mutated (`mutate_words`)."""
    import numpy as np

    from ..format import CodeType, read, write

    vgf = read(data)
    modules = [m for m in vgf.modules if m.code_type == CodeType.SPIRV and m.code is not None and len(m.code)]
    if not modules:
        return mutate_vgf(data, rng)
    module = rng.choice(modules)
    module.code = np.array(mutate_words([int(x) for x in module.code], rng), dtype=np.uint32)
    return write(vgf)


# -- targets -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A function `module:function` taking bytes, and how to mutate its seeds."""

    function: str
    mutate: Mutator

    def load(self) -> Callable[[bytes], object]:
        module, _, name = self.function.partition(":")
        return getattr(import_module(module), name)


def read_target(data: bytes) -> None:
    """pyvgf.format.read."""
    from ..format import read

    read(data)


def _zeros(model) -> list:
    import numpy as np

    return [np.zeros(i.shape, i.dtype) if i.live else np.zeros(0) for i in model.inputs]


def load_cpu_target(data: bytes) -> None:
    """pyvgf.load on the cpu backend, then one run on zeros."""
    from .. import load

    with load(data, backend="cpu") as model:
        model.run(_zeros(model))


_VULKAN: list = []


def load_vulkan_target(data: bytes) -> None:
    """pyvgf.load's steps on the vulkan backend (read, check, a device, the model), then one run
    on zeros. The worker keeps one adapter (VkInstance) for all its cases: making one a case
    would cost most of the time; everything else is made and destroyed per case."""
    from .. import hal
    from ..format import read
    from ..runtime.check import check
    from ..runtime.model import Model

    vgf = read(data)
    plans = check(vgf)
    if not _VULKAN:
        _VULKAN.append(hal.request_adapter("vulkan"))
    device = _VULKAN[0].request_device()
    try:
        model = Model(vgf, device, plans)
        model._release.detach()  # the device is destroyed below, the shared adapter kept
        model.run(_zeros(model))
    finally:
        device.destroy()


def cli_target(data: bytes) -> None:
    """`pyvgf inspect` (summary, --json, --spirv 0) and `pyvgf run --random-inputs` on a file of
    the bytes: exit status 0, or 1 with one line on stderr (then the case counts as refused);
    anything else (status 2 is a pyvgf bug) is an escape."""
    import contextlib
    import io

    from ..cli import main
    from ..errors import VGFError

    refused = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "case.vgf"
        path.write_bytes(data)
        for argv in (["inspect", str(path)], ["inspect", str(path), "--json"], ["inspect", str(path), "--spirv", "0"],
                     ["run", str(path), "--random-inputs"]):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                status = main(argv)
            lines = err.getvalue().strip().splitlines()
            if status not in (0, 1) or (status == 1 and len(lines) != 1):
                raise AssertionError(f"pyvgf {' '.join(argv[:1] + argv[2:])}: exit {status}, stderr {lines}")
            if status == 1:
                refused.append(lines[0])
    if refused:
        raise VGFError("; ".join(refused))


TARGETS: dict[str, Target] = {
    "read": Target("pyvgf.testing.fuzz:read_target", mutate_vgf),
    "load-cpu": Target("pyvgf.testing.fuzz:load_cpu_target", mutate_vgf),
    "load-vulkan": Target("pyvgf.testing.fuzz:load_vulkan_target", mutate_vgf),
    "spirv-cpu": Target("pyvgf.testing.fuzz:load_cpu_target", mutate_spirv),
    "spirv-vulkan": Target("pyvgf.testing.fuzz:load_vulkan_target", mutate_spirv),
    "cli": Target("pyvgf.testing.fuzz:cli_target", mutate_vgf),
    "scenario": Target("pyvgf.scenario:fuzz_target", mutate_bytes),
    "pte": Target("pyvgf.executorch.model:fuzz_target", mutate_bytes),
    "pte-cli": Target("pyvgf.testing.fuzz:cli_target", mutate_bytes),
}
"""Every fuzz target by name; add yours with one entry (see the module docstring)."""


# -- the worker ----------------------------------------------------------------------------------


def _worker(function: str, memory_limit: int) -> None:
    """Answer cases from stdin (4-byte length, bytes) with one JSON line each, until EOF."""
    from ..errors import VGFError

    if memory_limit:
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    if sys.platform == "linux":  # end with the campaign, even in the middle of a case
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # what targets print is not the protocol
    target = Target(function, mutate_bytes).load()
    import pyvgf.runtime.check  # noqa: F401 - imported before the first case's clock starts

    answers.write("ready\n")
    stdin = sys.stdin.buffer
    while True:
        head = stdin.read(4)
        if len(head) < 4:
            return
        data = stdin.read(struct.unpack("<I", head)[0])
        start = time.perf_counter()
        try:
            target(data)
            status, error = "ok", ""
        except VGFError as exc:
            status, error = "rejected", f"{type(exc).__name__}: {exc}"
        except BaseException as exc:  # noqa: BLE001 - everything else is what the campaign looks for
            status, error = "escape", "".join(traceback.format_exception(exc))
        seconds = time.perf_counter() - start
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        answers.write(json.dumps({"status": status, "error": error[-4000:], "seconds": seconds, "rss": rss}) + "\n")


class _Worker:
    def __init__(self, target: Target, memory_limit: int):
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - open for the worker's life, closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pyvgf.testing.fuzz", "--worker", target.function, str(memory_limit)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr)
        self.pending = b""
        self.eof = False
        self.ready = self._line(_STARTUP_S)  # imports are not part of the first case's time

    def _line(self, timeout: float) -> bytes | None:
        """The worker's next line, or None when it died or said nothing within `timeout`."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                self.eof = True
                return None
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line

    def ask(self, data: bytes, timeout: float) -> dict:
        """The worker's answer to one case, or a crash or hang (the worker is then dead)."""
        if self.ready is None:
            self.kill()
            raise RuntimeError(f"a fuzz worker did not start within {_STARTUP_S} s:\n{self.stderr_tail()}")
        try:
            self.proc.stdin.write(struct.pack("<I", len(data)) + data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return self._died()
        start, cpu = time.monotonic(), self._cpu()
        while True:
            line = self._line(1.0)
            if line is not None:
                return json.loads(line)
            if self.eof:
                return self._died()
            used, wall = self._cpu() - cpu, time.monotonic() - start
            if used > timeout or wall > _WALL_FACTOR * timeout:
                self.kill()
                return {"status": "hang", "error": f"no answer after {used:.0f} s of CPU time, {wall:.0f} s of "
                                                   f"wall time", "seconds": wall, "rss": 0}

    def _cpu(self) -> float:
        """The worker's CPU seconds so far (its threads', the driver's included); on a machine
        shared with other work a slow case is not a hang. Wall seconds where /proc is missing."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return time.monotonic()

    def _died(self) -> dict:
        code = self.proc.wait()
        what = f"signal {-code}" if code < 0 else f"exit status {code}"
        return {"status": "crash", "error": f"the worker ended by {what}", "seconds": 0.0, "rss": 0}

    def stderr_tail(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()[-4000:].decode(errors="replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()
        self.stderr.close()


# -- campaigns -----------------------------------------------------------------------------------


@dataclass
class Report:
    """What a campaign saw: counts by outcome, the slowest case, the workers' peak memory."""

    target: str
    cases: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    slowest: tuple[float, int] = (0.0, -1)
    """(seconds, case index) of the slowest case."""
    peak_rss: int = 0
    """The largest resident set of any worker, in bytes."""
    failures: list[Path] = field(default_factory=list)
    """The reproducers saved (.bin; a .txt beside each says what happened)."""

    @property
    def escapes(self) -> int:
        return sum(self.counts.get(k, 0) for k in ("escape", "crash", "hang"))

    def summary(self) -> str:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        return (f"{self.target}: {self.cases} cases ({counts}); failures {self.escapes}; slowest case "
                f"{self.slowest[0]:.3f} s (#{self.slowest[1]}); peak worker memory {self.peak_rss / 2**20:.0f} MiB")


def case_bytes(target: Target, seeds: Sequence[bytes], seed: int, index: int) -> bytes:
    """Case `index` of a campaign of `seed` over `seeds`."""
    rng = random.Random(f"{seed}:{index}")
    return target.mutate(seeds[index % len(seeds)], rng)


def campaign(name: str, seeds: Sequence[bytes | Path], cases: int, seed: int = 0, out: Path | None = None,
             timeout: float = 300.0, restart_every: int = 2000, memory_limit: int = 8 << 30, start: int = 0,
             progress: Callable[[Report], None] | None = None, stop: threading.Event | None = None) -> Report:
    """Run cases `start` .. `start + cases - 1` of target `name` over `seeds` in a worker process.

    A worker answers up to `restart_every` cases, and is started again after each failure. A
    case that takes more than `timeout` seconds of the worker's CPU time (or 10 times as long
    in wall time) is a hang.
    `memory_limit` caps each worker's address space (bytes; 0: none), so that an allocation a
    file should never cause becomes a MemoryError (an escape) and not the machine's trouble.
    Reproducers go to `out` (when given). Setting `stop` ends the campaign after the case in
    flight; the report then counts the cases run.
    """
    target = TARGETS[name]
    corpus = [s if isinstance(s, bytes) else Path(s).read_bytes() for s in seeds]
    report = Report(name)
    worker: _Worker | None = None
    answered = 0
    try:
        for index in range(start, start + cases):
            if stop is not None and stop.is_set():
                break
            try:
                data = case_bytes(target, corpus, seed, index)
            except Exception:  # noqa: BLE001 - a mutator that cannot apply: the seed unchanged
                data = corpus[index % len(corpus)]
            if worker is None or answered >= restart_every:
                if worker is not None:
                    worker.close()
                worker, answered = _start(target, memory_limit), 0
            answer = worker.ask(data, timeout)
            answered += 1
            status = answer["status"]
            report.cases += 1
            report.counts[status] = report.counts.get(status, 0) + 1
            report.peak_rss = max(report.peak_rss, answer["rss"])
            if answer["seconds"] > report.slowest[0]:
                report.slowest = (answer["seconds"], index)
            if status in ("escape", "crash", "hang"):
                if status != "escape":
                    answer["error"] += "\n--- worker stderr ---\n" + worker.stderr_tail()
                    worker.close()
                    worker = None
                if out is not None:
                    report.failures.append(_save(out, name, seed, index, data, answer))
            if progress is not None and report.cases % 100 == 0:
                progress(report)
    finally:
        if worker is not None:
            worker.close()
    return report


def _start(target: Target, memory_limit: int, attempts: int = 3) -> _Worker:
    """A worker that said it is ready; a start that fails (a busy machine) is tried again."""
    for _ in range(attempts - 1):
        worker = _Worker(target, memory_limit)
        if worker.ready is not None:
            return worker
        worker.kill()
        worker.close()
    return _Worker(target, memory_limit)  # its ask() raises, with its stderr, if it failed too


def _save(out: Path, name: str, seed: int, index: int, data: bytes, answer: dict) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}-{seed}-{index}.bin"
    path.write_bytes(data)
    path.with_suffix(".txt").write_text(f"target {name}, seed {seed}, case {index}: {answer['status']}\n"
                                        f"{answer['error']}\n")
    return path


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "--worker":
    _worker(sys.argv[2], int(sys.argv[3]))
