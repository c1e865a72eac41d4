"""Targets that fail on purpose, for the tests of the fuzz harness (imported by its workers)."""

from __future__ import annotations

import faulthandler
import time


def segfault(data: bytes) -> None:
    faulthandler._sigsegv()


def parse_int(data: bytes) -> None:
    int(data)


def sleep(data: bytes) -> None:
    time.sleep(60)
