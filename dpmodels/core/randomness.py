"""Where the random bits of a release come from (PRIVACY.md rule 7).

A release draws its noise from a source of uniform 64-bit words:

* `SecureBits` (the default, ``random_state=None``): the operating
  system's cryptographically secure generator (`os.urandom()`, the
  ``getrandom`` system call on Linux), read directly for every draw.  Its
  output cannot be predicted from earlier output, unlike a fast
  non-cryptographic generator (PCG64, Mersenne Twister) that was merely
  seeded from the OS once.
* `SeededBits` (``random_state=<int or numpy Generator>``): the words
  of a numpy generator, for reproducible tests and docs.  Not secure; the
  privacy report says a seeded generator was used.

The exact samplers of `dpmodels.core.exact` consume these words and nothing
else.  `make_rng()` gives the numpy ``Generator`` that post-processing
(the parametric bootstrap) uses: its randomness is not part of the privacy
guarantee.
"""

from __future__ import annotations

import numbers
import os
import secrets
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["RandomBits", "SecureBits", "SeededBits", "random_source", "make_rng",
           "check_random_state"]

#: os.urandom is asked for at most this many bytes at a time.
_URANDOM_CHUNK = 1 << 24


@runtime_checkable
class RandomBits(Protocol):
    """A source of independent uniform 64-bit words."""

    #: True when the words are reproducible (a seeded generator): not private.
    seeded: bool

    def words(self, size: int) -> np.ndarray:
        """``size`` independent uniform words, as a uint64 array."""


class SecureBits:
    """Uniform words from the operating system's secure generator.

    Examples
    --------
    >>> SecureBits().words(3).dtype
    dtype('uint64')
    """

    seeded = False

    def words(self, size: int) -> np.ndarray:
        size = int(size)
        if size <= 0:
            return np.zeros(0, np.uint64)
        nbytes = 8 * size
        if nbytes <= _URANDOM_CHUNK:
            return np.frombuffer(os.urandom(nbytes), dtype=np.uint64)
        out = np.empty(size, np.uint64)
        raw = out.view(np.uint8)
        for start in range(0, nbytes, _URANDOM_CHUNK):
            stop = min(start + _URANDOM_CHUNK, nbytes)
            raw[start:stop] = np.frombuffer(os.urandom(stop - start), dtype=np.uint8)
        return out

    def __repr__(self) -> str:
        return "SecureBits(os.urandom)"


class SeededBits:
    """Uniform words from a numpy ``Generator`` (reproducible, NOT secure).

    Examples
    --------
    >>> a = SeededBits(np.random.default_rng(1)).words(2)
    >>> b = SeededBits(np.random.default_rng(1)).words(2)
    >>> bool((a == b).all())
    True
    """

    seeded = True

    def __init__(self, generator: np.random.Generator):
        self.generator = generator

    def words(self, size: int) -> np.ndarray:
        size = int(size)
        if size <= 0:
            return np.zeros(0, np.uint64)
        return self.generator.integers(0, np.iinfo(np.uint64).max, size=size,
                                       dtype=np.uint64, endpoint=True)

    def __repr__(self) -> str:
        return f"SeededBits({self.generator!r})"


#: The library's own word sources (checked by exact type: a runtime-checkable
#: Protocol's isinstance costs ~0.1 ms, and the exact samplers call
#: `random_source()` once per draw).
_SOURCES = (SecureBits, SeededBits)


def check_random_state(random_state) -> None:
    """Raise ``TypeError``/``ValueError`` unless ``random_state`` is None, a
    non-negative int (not a bool), a numpy ``Generator`` or a
    `RandomBits`.  Public input only: called before any data is read."""
    if random_state is None or isinstance(random_state, (np.random.Generator, RandomBits)):
        return
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, (bool, np.bool_)):
        if int(random_state) < 0:
            raise ValueError(f"random_state must be a non-negative int seed, got {random_state!r}")
        return
    raise TypeError(
        "random_state must be None (secure OS randomness, the default), a non-negative int "
        f"seed or a numpy Generator (seeded: for tests and docs only); got "
        f"{type(random_state).__name__}"
    )


def random_source(random_state) -> RandomBits:
    """The word source of a release: secure by default, seeded on request.

    Examples
    --------
    >>> random_source(None).seeded, random_source(7).seeded
    (False, True)
    """
    if type(random_state) in _SOURCES:  # fast path: the samplers pass their source on
        return random_state
    check_random_state(random_state)
    if random_state is None:
        return SecureBits()
    if isinstance(random_state, RandomBits):
        return random_state
    if isinstance(random_state, np.random.Generator):
        return SeededBits(random_state)
    return SeededBits(np.random.default_rng(int(random_state)))


def make_rng(random_state) -> np.random.Generator:
    """A numpy ``Generator`` for post-processing (the bootstrap's simulations).

    ``None`` seeds PCG64 with 128 bits of OS entropy; an int or a Generator
    makes the run reproducible.  Not used for the noise of a release.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None:
        return np.random.Generator(np.random.PCG64(secrets.randbits(128)))
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return np.random.default_rng(int(random_state))
    raise TypeError(
        "random_state must be None (secure entropy), an int seed or a numpy Generator; "
        f"got {type(random_state).__name__}"
    )
