"""The compiled loops' first compilation, in another process while the reference answers.

numba compiles a loop for the argument types it first meets, a second or more each, and caches
the machine code on disk (compiled.py), so a process finding the cache warm only loads it. On a
machine's first run the cache is empty: compiling MobileNetV2's loops then took 3-6 s before
the first result. Instead, while a fast plan runs (`deferring`), a loop whose machine code for
the arguments it is given is neither in the process nor in the cache raises `NotCompiled`
rather than compiling, and asks the compiler process to compile it; the plan's step then runs
the reference operators it stands for (plan.py), which give the same results: integers
bit-exact, floats within pyvgf.testing's tolerance. The compiler process compiles each loop
into the on-disk cache; a later run of the step finds it there and loads it.

Another process rather than a thread: numba compiles under one lock and mostly in Python, so a
thread would hold the GIL, and the lock against the very loading of cached loops, for seconds.
The compiler process ("python -c" on the same pyvgf and the same numba cache folder) reads
one request a line, (loop name, argument types) pickled, until its input closes: at the end of
each run that asked for anything, so it exits once that run's loops are compiled, and when
this process ends, so a short-lived process (`pyvgf run`) still leaves the cache warm for the
next. One compiler process at a time, so that two never write a loop's cache index at once:
requests made while one runs with its input closed wait for the next. A loop the compiler
process was asked for but did not deliver (it failed, or the cache is elsewhere) is compiled
in this process, as it was without any of this, so its errors surface where they would have.

A daemon thread waits for each compiler process, so none is left a zombie, and nothing waits
for one at exit. A forked child starts with no compiler process of its own (the parent's pipe
and process are not its own).
"""

from __future__ import annotations

import base64
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

NICENESS = 5
"""How much lower the compiler process's priority is than its parent's: where the cores are
busy, the runs that wait for it come first, yet it is not starved. On the busy 2-core project
machine, with MobileNetV2 int8's reference runs back to back beside it, it compiled in 8 s at
0 (the runs 2x slower meanwhile), 18 s at 5 (1.25x) and 62 s at 10 (no slower)."""

Key = tuple[str, tuple[Any, ...]]
"""A loop's name in compiled.LOOPS and the numba types of its arguments."""


class NotCompiled(BaseException):
    """A loop's machine code is not ready yet; the step that called it runs the reference.

    A BaseException, like GeneratorExit, so that the handlers naming a failing operator
    (interpreter.guard) let it through to the plan's run (plan.FastPlan._instead)."""


_state = threading.local()


def deferring_now() -> bool:
    """Whether a loop missing from the cache defers its compilation in this thread now."""
    return getattr(_state, "deferring", False)


@contextmanager
def deferring() -> Iterator[None]:
    """Inside the block, in this thread, a loop whose machine code is neither loaded nor in
    the cache raises NotCompiled and is compiled by the compiler process; at the end, the
    compiler process gets no more requests and exits when done (its later ones go to the next)."""
    before = deferring_now()
    _state.deferring = True
    try:
        yield
    finally:
        _state.deferring = before
        if not before:
            _COMPILER.close()


def defer(loop: Any, name: str) -> None:
    """Make numba `loop` (a dispatcher caching on disk, compiled.LOOPS[name]) defer compiling
    while `deferring`. numba's dispatcher calls `_compile_for_args` for argument types it has
    no machine code for; where the loop has no cache index at all, that defers at once, before
    numba starts its compiler (LLVM: a few tenths of a second of a machine's first run). Else
    numba looks in the cache and calls its compiler only where the types are not there either,
    which then defers."""
    compile_for_args = loop._compile_for_args
    compiler = loop._compiler
    compile_now: Callable[..., object] = compiler.compile
    index = loop._cache._cache_file._index_path

    def first_call(*args: object) -> object:
        if (deferring_now() and not os.path.exists(index)
                and _COMPILER.request((name, tuple(loop.typeof_pyval(a) for a in args)))):
            raise NotCompiled(name)
        return compile_for_args(*args)

    def compile_or_defer(args: tuple[Any, ...], return_type: object) -> object:
        if not deferring_now():
            return compile_now(args, return_type)
        if _COMPILER.request((name, tuple(args))):
            raise NotCompiled(name)
        _state.deferring = False  # the loops it calls are compiled with it, here
        try:
            return compile_now(args, return_type)
        finally:
            _state.deferring = True

    loop._compile_for_args = first_call
    compiler.compile = compile_or_defer


class _Compiler:
    """The compiler process and what it was asked (see the module doc)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._asked: set[Key] = set()
        """Sent to the compiler process that runs now."""
        self._waiting: list[Key] = []
        """For the next compiler process (the running one's input is closed)."""
        self._done: dict[Key, bool] = {}
        """Sent to a compiler process that has ended: whether a step has since been told to
        wait once more (the cache may have been read just before the loop was written)."""

    def request(self, key: Key) -> bool:
        """Whether the loop of `key` is (or will be) compiled by a compiler process, which
        its caller then waits for; False: compile it in this process."""
        with self._lock:
            self._reap()
            if key in self._done:
                waited = self._done[key]
                self._done[key] = True
                return not waited
            if key in self._asked or key in self._waiting:
                return True
            if self._process is None:
                return self._start([key])
            elif self._process.stdin is not None and not self._process.stdin.closed:
                self._send(key)
            else:
                self._waiting.append(key)
            return True

    def close(self) -> None:
        """No more requests to the compiler process that runs now."""
        with self._lock:
            if self._process is not None and self._process.stdin and not self._process.stdin.closed:
                self._process.stdin.close()

    def busy(self) -> bool:
        """Whether a compiler process runs or requests wait for one."""
        with self._lock:
            self._reap()
            return self._process is not None or bool(self._waiting)

    def wait(self, timeout: float | None = None) -> None:
        """Until every request made so far is compiled (or failed): compiler processes closed
        and waited for in turn."""
        while True:
            with self._lock:
                self._reap()
                process = self._process
                if process is None:
                    return
                if process.stdin and not process.stdin.closed:
                    process.stdin.close()
            process.wait(timeout)

    def forget(self) -> None:
        """A forked child's fresh start (the parent's compiler process is not its own): its
        copy of the pipe is closed, so the compiler process still ends when the parent's is."""
        if self._process is not None and self._process.stdin is not None:
            self._process.stdin.close()
        self._lock = threading.Lock()
        self._process, self._asked, self._waiting, self._done = None, set(), [], {}

    def _reap(self) -> None:
        """The ended compiler process's requests marked done; the waiting ones sent to a new one."""
        if self._process is None or self._process.poll() is None:
            return
        self._done.update((key, False) for key in self._asked)
        self._process, self._asked = None, set()
        if self._waiting:
            waiting, self._waiting = self._waiting, []
            self._start(waiting)

    def _start(self, keys: list[Key]) -> bool:
        """A compiler process for `keys`; False where none can be started (they are then
        compiled by the processes asking)."""
        root = str(Path(__file__).resolve().parents[2])  # this pyvgf's, whatever sys.path says
        code = f"import sys; sys.path.insert(0, {root!r}); from pyvgf.fast.background import serve; serve()"
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, env=_environment())
        except OSError:
            self._done.update((key, True) for key in keys)
            return False
        threading.Thread(target=self._process.wait, name="pyvgf-compiler-wait", daemon=True).start()
        for key in keys:
            self._send(key)
        return True

    def _send(self, key: Key) -> None:
        assert self._process is not None and self._process.stdin is not None
        try:
            self._process.stdin.write(base64.b64encode(pickle.dumps(key)) + b"\n")
            self._process.stdin.flush()
        except OSError:  # it ended (killed?): the step will compile the loop itself
            pass
        self._asked.add(key)


def _environment() -> dict[str, str]:
    """This process's environment, with numba's cache folder as this process has it."""
    import numba

    env = dict(os.environ)
    if numba.config.CACHE_DIR:
        env["NUMBA_CACHE_DIR"] = numba.config.CACHE_DIR
    return env


_COMPILER = _Compiler()
os.register_at_fork(after_in_child=_COMPILER.forget)


def busy() -> bool:
    """Whether loops are being compiled in the background (or wait to be)."""
    return _COMPILER.busy()


def wait(timeout: float | None = None) -> None:
    """Until the loops asked of the compiler process so far are compiled into the cache: a
    run after this loads them rather than running the reference in their place."""
    _COMPILER.wait(timeout)


def serve() -> None:
    """The compiler process: compile each loop asked on standard input into the cache, until
    it closes. A loop that fails is left to the process that asked (it compiles it itself)."""
    os.nice(NICENESS)
    from . import compiled

    for line in sys.stdin.buffer:
        name, args = pickle.loads(base64.b64decode(line))
        try:
            compiled.LOOPS[name].compile(args)
        except Exception:  # noqa: BLE001, S110 (the asking process compiles it and reports)
            pass
