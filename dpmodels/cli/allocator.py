"""The ``dpmodels`` command's memory allocator settings.

glibc's ``malloc`` hands every block above its mmap threshold (128 KiB at
start) straight back to the system when it is freed, and trims the top of its
heap beyond 128 KiB: a row pass's large temporaries (a batch's design, its
scaled rows) are then mapped afresh on every allocation and page-fault on first
touch.  The command is a process of its own, so it raises both thresholds
(`tune()`): freed blocks up to 32 MiB (glibc's largest threshold) are reused,
and the heap keeps up to 512 MiB of free memory, with 256 MiB of padding per
growth.  Measured on `benchmarks/out_of_core.py`'s 10-column file at 1e6 rows
(DuckDB engine, moments): 7.4 s -> 6.1 s wall, 2.9 s -> 1.8 s of system time,
peak resident memory unchanged (812 -> 847 MB).  The library itself never does
this: a Python process that imports dpmodels keeps its own allocator settings
(``MALLOC_MMAP_THRESHOLD_`` and the like set them from the environment).
"""

from __future__ import annotations

import ctypes
import sys

__all__ = ["MMAP_THRESHOLD", "TOP_PAD", "TRIM_THRESHOLD", "tune"]

#: glibc's ``mallopt`` parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3
#: Blocks up to this size come from the heap (glibc's maximum on 64-bit systems).
MMAP_THRESHOLD = 32 * 2**20
#: Free memory the heap keeps at its top before returning it to the system.
TRIM_THRESHOLD = 512 * 2**20
#: Extra memory the heap takes each time it grows.
TOP_PAD = 256 * 2**20


def tune() -> bool:
    """Apply the settings to this process's glibc ``malloc``; returns whether
    it took them all (False elsewhere: another C library or platform, where
    nothing is changed)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own C library
    except (OSError, AttributeError):  # pragma: no cover - a libc without mallopt
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return all([mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1,
                mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1,
                mallopt(_M_TOP_PAD, TOP_PAD) == 1])
