"""Writing event-log bytes in Spark's codec containers, the inverse of `codecs`.

flowscope rewrites Spark logs (redacting machine paths before a log is shared or committed as a fixture) and its
tests need logs in every codec, including ones flushed in pieces the way a running Spark flushes them. Spark (and
its History Server) must still be able to read what comes out, so the containers are exact: one zstd frame per
flush like Spark's continuous zstd stream, lz4-java blocks with their xxhash32 checksums, snappy-java's header and
blocks, ning LZF chunks, gzip members.

`encode_flush(codec, data, first=...)` gives the bytes Spark would append for one flush of `data`;
`encode_end(codec)` the bytes it writes on close; `encode(codec, blocks)` a whole file.
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Iterable

from backend.eventlog.codecs import LZ4_MAGIC, SNAPPY_MAGIC

__all__ = ["encode", "encode_end", "encode_flush", "xxh32"]

_LZ4_SEED = 0x9747B28C
_LZ4_BLOCK = 1 << 15  # Spark's spark.io.compression.lz4.blockSize default
_LZF_MAX_CHUNK = 0xFFFF


def _lz4_level(block_size: int) -> int:
    """lz4-java's token low nibble: log2 of the block size above 1 KiB."""
    return max(0, (block_size - 1).bit_length() - 10)


def encode_flush(codec: str | None, data: bytes, *, first: bool = False) -> bytes:
    """The bytes that one flush of `data` adds to a file in `codec` (None = plain).

    `first` adds the stream header for codecs that have one (snappy)."""
    if codec is None:
        return data
    if codec == "gz":
        return gzip.compress(data, mtime=0)
    if codec == "zstd":
        import zstandard

        return zstandard.ZstdCompressor(level=3).compress(data)
    if codec == "lz4":
        return _lz4_blocks(data)
    if codec == "snappy":
        import cramjam

        head = SNAPPY_MAGIC + struct.pack(">ii", 1, 1) if first else b""
        blocks = (bytes(cramjam.snappy.compress_raw(data[i : i + 32768])) for i in range(0, len(data), 32768))
        return head + b"".join(struct.pack(">i", len(block)) + block for block in blocks)
    if codec == "lzf":
        return _lzf_chunks(data)
    raise ValueError(f"unknown codec {codec!r}")


def encode_end(codec: str | None) -> bytes:
    """What closing the stream appends: lz4-java's end-of-stream block; nothing for the others."""
    if codec == "lz4":
        return LZ4_MAGIC + bytes([0x10 | _lz4_level(_LZ4_BLOCK)]) + struct.pack("<iii", 0, 0, 0)
    return b""


def encode(codec: str | None, blocks: Iterable[bytes]) -> bytes:
    """A whole file: `blocks` flushed one after the other, then closed."""
    out = [encode_flush(codec, block, first=i == 0) for i, block in enumerate(blocks)]
    if not out and codec == "snappy":
        out.append(encode_flush(codec, b"", first=True))
    out.append(encode_end(codec))
    return b"".join(out)


def _lz4_blocks(data: bytes, block_size: int = _LZ4_BLOCK) -> bytes:
    import lz4.block

    level = _lz4_level(block_size)
    out = []
    for i in range(0, len(data), block_size):
        raw = data[i : i + block_size]
        packed = lz4.block.compress(raw, store_size=False)
        checksum = xxh32(raw, _LZ4_SEED) & 0xFFFFFFF
        if len(packed) >= len(raw):  # lz4-java stores incompressible blocks raw
            token, packed = 0x10 | level, raw
        else:
            token = 0x20 | level
        out.append(LZ4_MAGIC + bytes([token]) + struct.pack("<iii", len(packed), len(raw), checksum) + packed)
    return b"".join(out)


def _lzf_chunks(data: bytes) -> bytes:
    """ning LZF chunks; compressed when an LZF library is installed, stored (type 0) otherwise."""
    compress = _lzf_compress_fn()
    out = []
    for i in range(0, len(data), _LZF_MAX_CHUNK):
        raw = data[i : i + _LZF_MAX_CHUNK]
        packed = compress(raw) if compress is not None else None
        if packed and len(packed) < len(raw):
            out.append(b"ZV\x01" + struct.pack(">HH", len(packed), len(raw)) + packed)
        else:
            out.append(b"ZV\x00" + struct.pack(">H", len(raw)) + raw)
    return b"".join(out)


def _lzf_compress_fn():
    try:
        import cramjam

        if hasattr(cramjam, "lzf"):
            return lambda raw: bytes(cramjam.lzf.compress(raw))
    except ImportError:  # pragma: no cover
        pass
    try:
        import lzf  # python-lzf
    except ImportError:
        return None
    return lambda raw: lzf.compress(raw)


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 (lz4-java's block checksum, with its seed). Pure Python: fine for writing, too slow for reading."""
    n = len(data)
    i = 0
    if n >= 16:
        v1, v2, v3, v4 = (seed + _P1 + _P2) & _M, (seed + _P2) & _M, seed & _M, (seed - _P1) & _M
        end = n - n % 16
        for a, b, c, d in struct.iter_unpack("<4I", data[:end]):
            v1 = _rotl((v1 + a * _P2) & _M, 13) * _P1 & _M
            v2 = _rotl((v2 + b * _P2) & _M, 13) * _P1 & _M
            v3 = _rotl((v3 + c * _P2) & _M, 13) * _P1 & _M
            v4 = _rotl((v4 + d * _P2) & _M, 13) * _P1 & _M
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M
        i = end
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while i + 4 <= n:
        (w,) = struct.unpack_from("<I", data, i)
        h = _rotl((h + w * _P3) & _M, 17) * _P4 & _M
        i += 4
    while i < n:
        h = _rotl((h + data[i] * _P5) & _M, 11) * _P1 & _M
        i += 1
    h ^= h >> 15
    h = h * _P2 & _M
    h ^= h >> 13
    h = h * _P3 & _M
    h ^= h >> 16
    return h
