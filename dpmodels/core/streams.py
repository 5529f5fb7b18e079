"""Per-row random streams: randomness keyed by a row's position, not by how
the rows are split into batches (PRIVACY.md rule 7).

A release that randomizes row by row (local randomization) or assigns rows
to blocks (sample-and-aggregate) where the data live must give the same
release whatever the engine's batches or partitions are: a Dask frame of 7
partitions, a Spark frame of 3, a Polars scan streamed in batches of 65,536
rows and the same rows in one pandas frame.  A sequential source
(`SecureBits`) cannot: how many words the rows
before a batch used is not known in that batch.

`RowStreams` gives every row its own stream instead: word ``j`` of the
row at position ``i`` (0-based, in the order the engine hands the rows over)
is the first 64 bits of ``AES-128_K(i || j)``, for a key ``K`` of 128 bits
drawn once per release from the release's source.  AES is a pseudorandom
permutation, so with a secret key the words are indistinguishable from
independent uniform words; the key comes from the operating system's secure
generator by default (a CSPRNG keyed from it, as rule 7 allows), or from the
seeded generator when ``random_state`` is given (reproducible, NOT secure;
the report says so).  The key is the only state: a `RowStreams`
pickles to Dask's and Spark's workers as 16 bytes.

Examples
--------
>>> s = RowStreams.from_source(0)
>>> a = s.words(np.arange(5), 0)
>>> b = s.words(np.arange(2, 5), 0)
>>> bool((a[2:] == b).all())
True
"""

from __future__ import annotations

import numpy as np

from .randomness import RandomBits, random_source

__all__ = ["RowStreams"]


class RowStreams:
    """Independent uniform 64-bit word streams, one per row position.

    Parameters
    ----------
    key : bytes
        16 bytes: the AES-128 key.
    seeded : bool
        True when the key came from a seeded generator (not secure).
    """

    def __init__(self, key: bytes, seeded: bool):
        if not isinstance(key, bytes) or len(key) != 16:
            raise ValueError("a RowStreams key is 16 bytes")
        self.key = key
        self.seeded = bool(seeded)

    @classmethod
    def from_source(cls, source: RandomBits | int | np.random.Generator | None) -> RowStreams:
        """A key of 128 bits from a release's word source (secure by default)."""
        bits = random_source(source)
        return cls(bits.words(2).astype("<u8").tobytes(), bits.seeded)

    def words(self, rows: np.ndarray, j) -> np.ndarray:
        """Word ``j`` (an int, or one per row) of each row position in ``rows``
        (non-negative ints), as a uint64 array of the same length."""
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        rows = np.asarray(rows)
        n = rows.size
        if n == 0:
            return np.zeros(0, np.uint64)
        if rows.ndim != 1 or (rows.dtype.kind == "i" and rows.min() < 0):
            raise ValueError("rows are non-negative row positions in a 1-d array")
        block = np.empty((n, 2), "<u8")
        block[:, 0] = rows
        block[:, 1] = j
        enc = Cipher(algorithms.AES(self.key), modes.ECB()).encryptor()
        out = np.frombuffer(enc.update(block.tobytes()) + enc.finalize(), "<u8")
        return out.reshape(n, 2)[:, 0].astype(np.uint64)

    def __reduce__(self):
        return (RowStreams, (self.key, self.seeded))

    def __repr__(self) -> str:
        return f"RowStreams({'seeded' if self.seeded else 'secure'} key)"
