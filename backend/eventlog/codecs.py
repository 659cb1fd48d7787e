"""Incremental decoders for the compression codecs Spark writes event logs with.

Spark names the file after `spark.eventLog.compression.codec` (`.zstd`, `.lz4`, `.snappy`, `.lzf`; flowscope's
fixtures also use `.gz`). Three are not the container formats a generic library expects (lz4-java's `LZ4Block`
stream, snappy-java's stream, ning compress-lzf's `ZV` chunks), so each gets a small decoder here that parses the
container and hands the blocks to a well-kept library. Plain, gzip and zstd are `tracker.progress_log.codecs`'s.

Every decoder is incremental, since the same code reads a finished log and tails one Spark is still writing:
`decode(chunk)` returns what it could decode so far and keeps an incomplete block; `pending` counts the bytes held
(a finished file that ends with `pending > 0` was truncated). Corrupt input raises `CodecError`; `chunks(chunk)`
yields the text in bounded pieces, for `tracker.progress_log.jsonl`.
"""

from __future__ import annotations

import importlib
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from backend.stores import StoreUrl
from tracker.progress_log.codecs import CodecError, Decoder, GzipDecoder, PlainDecoder, ZstdDecoder

__all__ = [
    "CODECS",
    "CodecError",
    "Decoder",
    "MissingCodecError",
    "codec_from_name",
    "decompresses_past",
    "make_decoder",
    "strip_codec",
]

# Suffix -> codec name. `zst` is accepted for files compressed by hand with the zstd tool.
CODECS: dict[str, str] = {
    "zstd": "zstd",
    "zst": "zstd",
    "lz4": "lz4",
    "snappy": "snappy",
    "lzf": "lzf",
    "gz": "gz",
}


class MissingCodecError(RuntimeError):
    """The log is compressed with a codec whose decoder library is not installed."""


def _strip_state(name: str) -> str:
    """Drop the `.compact` / `.inprogress` suffixes Spark puts after the codec's."""
    for suffix in (".compact", ".inprogress"):
        name = name.removesuffix(suffix)
    return name


def codec_from_name(name: str) -> str | None:
    """The codec a Spark event-log file name announces (ignoring `.inprogress`, `.compact`), or None for plain."""
    _, dot, suffix = _strip_state(name).rpartition(".")
    return CODECS.get(suffix.lower()) if dot else None


def strip_codec(name: str) -> str:
    """`name` without its `.inprogress`, `.compact` and codec suffixes: the application (attempt) name."""
    name = _strip_state(name)
    stem, dot, suffix = name.rpartition(".")
    return stem if dot and suffix.lower() in CODECS else name


def make_decoder(codec: str | None, path: str | Path | StoreUrl = "<stream>") -> Decoder:
    """A fresh decoder for `codec` (None = plain text). `path` only names the file in errors."""
    if codec is None:
        return PlainDecoder()
    if codec == "gz":
        return GzipDecoder()
    if codec == "zstd":
        return ZstdDecoder(_require("zstandard", codec, path))
    if codec == "lz4":
        return Lz4BlockDecoder(_require("lz4.block", codec, path, "lz4"))
    if codec == "snappy":
        return SnappyStreamDecoder(_require("cramjam", codec, path))
    if codec == "lzf":
        return LzfDecoder(_lzf_block_decompressor(path))
    raise MissingCodecError(f"{path}: unknown compression codec {codec!r}")


def decompresses_past(path: str | Path, limit: int, chunk_size: int = 1 << 16) -> bool:
    """True if the file decompresses to more than ``limit`` bytes.

    By the codec its name announces, every codec here. Stops as soon as it knows, so a decompression bomb costs at most
    ``limit`` bytes of work and one block of memory. Damaged compressed bytes end the count (the reader reports the
    damage); a codec whose library is missing counts nothing (opening the log says so)."""
    codec = codec_from_name(Path(path).name)
    if codec is None:
        return Path(path).stat().st_size > limit
    try:
        decoder = make_decoder(codec, path)
    except MissingCodecError:
        return False
    total = 0
    with open(path, "rb") as fh:
        try:
            while data := fh.read(chunk_size):
                for text in decoder.chunks(data):
                    total += len(text)
                    if total > limit:
                        return True
        except CodecError:
            return False
    return False


class _BlockDecoder:
    """Shared buffering for the length-prefixed block containers: collects input until a whole block is there."""

    codec = "?"

    def __init__(self) -> None:
        self._buf = bytearray()
        self._pos = 0

    @property
    def pending(self) -> int:
        return len(self._buf) - self._pos

    def decode(self, data: bytes) -> bytes:
        if self._pos:
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += data
        out: list[bytes] = []
        try:
            while self._next_block(out):
                pass
        except CodecError as exc:
            exc.partial = b"".join(out)
            raise
        return b"".join(out)

    def chunks(self, data: bytes) -> Iterator[bytes]:
        """The blocks' text, one block at a time (bounded by the container's largest block)."""
        if self._pos:
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += data
        while True:
            out: list[bytes] = []
            if not self._next_block(out):
                return
            yield from out

    def _next_block(self, out: list[bytes]) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError


LZ4_MAGIC = b"LZ4Block"
_LZ4_HEADER = struct.Struct("<iii")  # compressed length, raw length, checksum
_LZ4_RAW, _LZ4_COMPRESSED = 0x10, 0x20
_LZ4_MAX_BLOCK = 1 << 25  # lz4-java's largest block size (compression level 15 -> 32 MiB)


class Lz4BlockDecoder(_BlockDecoder):
    """lz4-java's `LZ4BlockOutputStream`.

    Per block `LZ4Block`, a token, then LE int32 compressed length, raw length and xxhash32 checksum, then the data. The
    token's high nibble says raw (0x10) or LZ4 (0x20). A block with raw length 0 ends a stream; another stream may
    follow (lz4-java reads concatenated streams). The checksum is not verified (it needs xxhash with lz4-java's seed; a
    corrupt block almost always fails to decompress anyway)."""

    codec = "lz4"

    def __init__(self, lz4_block: Any) -> None:
        super().__init__()
        self._decompress = lz4_block.decompress
        self._lz4_error = getattr(lz4_block, "LZ4BlockError", Exception)

    def _next_block(self, out: list[bytes]) -> bool:
        buf, pos = self._buf, self._pos
        avail = len(buf) - pos
        n = min(8, avail)
        if buf[pos : pos + n] != LZ4_MAGIC[:n]:
            raise CodecError(f"lz4: bad block magic {bytes(buf[pos : pos + 8])!r}, expected {LZ4_MAGIC!r}")
        if avail < 21:
            return False
        token = buf[pos + 8]
        clen, rlen, _checksum = _LZ4_HEADER.unpack_from(buf, pos + 9)
        method = token & 0xF0
        if (
            method not in (_LZ4_RAW, _LZ4_COMPRESSED)
            or not (0 <= clen <= _LZ4_MAX_BLOCK)
            or not (0 <= rlen <= _LZ4_MAX_BLOCK)
        ):
            raise CodecError(f"lz4: bad block header (token {token:#x}, lengths {clen}/{rlen})")
        if len(buf) - pos < 21 + clen:
            return False
        start = pos + 21
        block = bytes(buf[start : start + clen])
        self._pos = start + clen
        if rlen == 0:  # end-of-stream marker
            return True
        if method == _LZ4_RAW:
            if clen != rlen:
                raise CodecError(f"lz4: raw block with lengths {clen}/{rlen}")
            out.append(block)
        else:
            try:
                out.append(self._decompress(block, uncompressed_size=rlen))
            except self._lz4_error as exc:
                raise CodecError(f"lz4: {exc}") from None
        return True


SNAPPY_MAGIC = b"\x82SNAPPY\x00"
_SNAPPY_HEADER_LEN = 16  # magic + BE int32 version + BE int32 compatible version
_BE_INT = struct.Struct(">i")
_SNAPPY_MAX_BLOCK = 1 << 28


class SnappyStreamDecoder(_BlockDecoder):
    """snappy-java's `SnappyOutputStream`.

    A 16-byte header, then blocks of BE int32 length + raw snappy data. A header may appear again between blocks
    (snappy-java reads concatenated streams)."""

    codec = "snappy"

    def __init__(self, cramjam: Any) -> None:
        super().__init__()
        self._decompress = cramjam.snappy.decompress_raw
        self._error = cramjam.DecompressionError

    def _next_block(self, out: list[bytes]) -> bool:
        buf, pos = self._buf, self._pos
        avail = len(buf) - pos
        if avail < 4:
            return False
        if buf[pos] == SNAPPY_MAGIC[0]:  # a stream header: the length would be negative, so no ambiguity
            if avail < _SNAPPY_HEADER_LEN:
                if buf[pos : pos + 8] != SNAPPY_MAGIC[: min(8, avail)]:
                    raise CodecError(f"snappy: bad stream header {bytes(buf[pos : pos + 8])!r}")
                return False
            if buf[pos : pos + 8] != SNAPPY_MAGIC:
                raise CodecError(f"snappy: bad stream header {bytes(buf[pos : pos + 8])!r}")
            self._pos = pos + _SNAPPY_HEADER_LEN
            return True
        (length,) = _BE_INT.unpack_from(buf, pos)
        if not 0 <= length <= _SNAPPY_MAX_BLOCK:
            raise CodecError(f"snappy: bad block length {length}")
        if avail < 4 + length:
            return False
        start = pos + 4
        block = bytes(buf[start : start + length])
        self._pos = start + length
        try:
            out.append(bytes(self._decompress(block)))
        except self._error as exc:
            raise CodecError(f"snappy: {exc}") from None
        return True


class LzfDecoder(_BlockDecoder):
    """ning compress-lzf's `LZFOutputStream`.

    Chunks of `ZV`, a type byte, then either (type 0, stored) a BE uint16 length and the bytes, or (type 1, compressed)
    BE uint16 compressed and raw lengths and an LZF block."""

    codec = "lzf"

    def __init__(self, block_decompress: Callable[[bytes, int], bytes]) -> None:
        super().__init__()
        self._decompress = block_decompress

    def _next_block(self, out: list[bytes]) -> bool:
        buf, pos = self._buf, self._pos
        avail = len(buf) - pos
        if avail < 5:
            if buf[pos : pos + 2] != b"ZV"[: min(2, avail)]:
                raise CodecError(f"lzf: bad chunk header {bytes(buf[pos : pos + 3])!r}")
            return False
        if buf[pos : pos + 2] != b"ZV" or buf[pos + 2] not in (0, 1):
            raise CodecError(f"lzf: bad chunk header {bytes(buf[pos : pos + 3])!r}")
        if buf[pos + 2] == 0:
            length = (buf[pos + 3] << 8) | buf[pos + 4]
            if avail < 5 + length:
                return False
            out.append(bytes(buf[pos + 5 : pos + 5 + length]))
            self._pos = pos + 5 + length
            return True
        if avail < 7:
            return False
        clen = (buf[pos + 3] << 8) | buf[pos + 4]
        rlen = (buf[pos + 5] << 8) | buf[pos + 6]
        if avail < 7 + clen:
            return False
        block = bytes(buf[pos + 7 : pos + 7 + clen])
        self._pos = pos + 7 + clen
        try:
            data = self._decompress(block, rlen)
        except Exception as exc:  # the libraries raise ValueError, their own errors or return None
            raise CodecError(f"lzf: {exc}") from None
        if data is None or len(data) != rlen:
            raise CodecError(f"lzf: block decoded to {0 if data is None else len(data)} bytes, expected {rlen}")
        out.append(bytes(data))
        return True


def _require(module: str, codec: str, path: str | Path | StoreUrl, package: str | None = None) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingCodecError(
            f"{path}: this event log is compressed with Spark's {codec} codec, and its decoder library is not "
            f"installed: pip install {package or module}"
        ) from None


def _lzf_block_decompress_fn() -> Callable[[bytes, int], bytes] | None:
    """The LZF block decompressor of an installed library: cramjam (if a build has lzf) or python-lzf."""
    try:
        import cramjam

        lzf_mod = getattr(cramjam, "lzf", None)
        if lzf_mod is not None:
            return lambda block, size: bytes(lzf_mod.decompress(block, output_len=size))
    except ImportError:  # pragma: no cover - cramjam is a dependency
        pass
    try:
        import lzf  # python-lzf
    except ImportError:
        return None
    return lambda block, size: lzf.decompress(block, size) if size else b""


def _lzf_block_decompressor(path: str | Path | StoreUrl) -> Callable[[bytes, int], bytes]:
    fn = _lzf_block_decompress_fn()
    if fn is None:
        raise MissingCodecError(
            f"{path}: this event log is compressed with Spark's lzf codec, and no LZF decoder is installed "
            "(cramjam has none). Install one with `pip install python-lzf`, or have Spark write zstd, lz4 or "
            "snappy (spark.eventLog.compression.codec)."
        )
    return fn
