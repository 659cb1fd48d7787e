"""Decoders for compressed files, read incrementally: plain text, gzip and zstd (the codecs progress logs use).

Every decoder has one shape, because the same code reads a finished file in one pass and tails one still being
written: ``chunks(data)`` takes the next bytes of a file and yields the text decoded so far in bounded pieces,
keeping an incomplete block for the next call; ``pending`` is how many input bytes it holds that do not yet form a
complete unit. Corrupt input raises :class:`CodecError`.

This is the one home of these decoders. It is in ``tracker/`` because progress logs (``progress_log``,
``jsonl``) are read with them and ``tracker/`` imports nothing from ``backend/``; the Spark event-log codecs
(``backend/eventlog/codecs.py``: lz4, snappy, lzf, in Spark's own containers) build on this module, adding their
decoders of the same shape, and reach gzip and zstd through it.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any, Protocol

__all__ = ["OUT_CHUNK", "CodecError", "Decoder", "GzipDecoder", "PlainDecoder", "ZstdDecoder", "decode_all",
           "file_decoder", "zstandard_module"]

OUT_CHUNK = 1 << 20  # decompressed bytes handed on at a time: a decompression bomb never sits in memory whole
_ZSTD_SLICE = 4096  # compressed bytes fed to zstd at a time (zstd can expand a few bytes into 128 KiB)
_GZIP_SLICE = 4096  # compressed bytes fed to zlib at a time


class CodecError(ValueError):
    """The compressed bytes are corrupt: the stream cannot be decoded past this point.

    ``partial`` is what the same ``decode`` call decoded before it met the damage."""

    def __init__(self, message: str, partial: bytes = b"") -> None:
        super().__init__(message)
        self.partial = partial


class Decoder(Protocol):
    """An incremental decoder of one codec.

    ``chunks(data)`` takes the next bytes of a file and yields the text decoded so far in bounded pieces, keeping an
    incomplete block for the next call; ``pending`` is how many input bytes it holds that do not yet form a complete
    unit (0 at a clean boundary). Corrupt input raises :class:`CodecError`."""

    codec: str

    def decode(self, data: bytes) -> bytes: ...

    def chunks(self, data: bytes) -> Iterator[bytes]: ...

    @property
    def pending(self) -> int: ...


class PlainDecoder:
    codec = "none"
    pending = 0

    def decode(self, data: bytes) -> bytes:
        return data

    def chunks(self, data: bytes) -> Iterator[bytes]:
        if data:
            yield data


class GzipDecoder:
    """gzip, including several members back to back (what appending with ``gzip >>`` produces)."""

    codec = "gz"

    def __init__(self) -> None:
        self._z = zlib.decompressobj(wbits=31)
        self._fed = 0  # input bytes fed to the current member

    @property
    def pending(self) -> int:
        return 0 if self._z.eof or self._fed == 0 else self._fed

    def decode(self, data: bytes) -> bytes:
        return decode_all(self, data)

    def chunks(self, data: bytes) -> Iterator[bytes]:
        # in slices: zlib drops a call's output when it meets damage, so a slice is all that damage can cost
        for start in range(0, len(data), _GZIP_SLICE):
            yield from self._member_chunks(data[start:start + _GZIP_SLICE])

    def _member_chunks(self, data: bytes) -> Iterator[bytes]:
        while data:
            self._fed += len(data)
            z = self._z
            while True:
                try:
                    out = z.decompress(data, OUT_CHUNK)
                except zlib.error as exc:
                    raise CodecError(f"gzip: {exc}") from None
                if out:
                    yield out
                if z.eof:  # (at the end of a member zlib leaves the rest in unused_data, and unconsumed_tail too)
                    break
                data = z.unconsumed_tail
                if not data and len(out) < OUT_CHUNK:
                    break
            if not z.eof:
                break
            data = z.unused_data
            self._z = zlib.decompressobj(wbits=31)
            self._fed = 0


class ZstdDecoder:
    """Zstandard, read across frames.

    Spark closes a frame at every flush, so a log is many frames back to back. Input is fed in small slices so that one
    call never expands into more than a few MiB."""

    codec = "zstd"

    def __init__(self, zstandard: Any) -> None:
        self._dctx = zstandard.ZstdDecompressor()
        self._error = zstandard.ZstdError
        self._obj = self._dctx.decompressobj()
        self._fed = 0  # input bytes fed to the current, unfinished frame

    @property
    def pending(self) -> int:
        return self._fed

    def decode(self, data: bytes) -> bytes:
        return decode_all(self, data)

    def chunks(self, data: bytes) -> Iterator[bytes]:
        view = memoryview(data)
        pos = 0
        while pos < len(view):
            piece = view[pos:pos + _ZSTD_SLICE]
            pos += len(piece)
            self._fed += len(piece)
            try:
                out = self._obj.decompress(piece)
            except self._error as exc:
                raise CodecError(f"zstd: {exc}") from None
            if out:
                yield out
            if self._obj.eof:  # a frame ended inside this slice: the rest starts the next frame
                rest = self._obj.unused_data
                self._obj = self._dctx.decompressobj()
                self._fed = 0
                if rest:
                    pos -= len(rest)


def decode_all(decoder: Decoder, data: bytes) -> bytes:
    """All of ``decoder``'s text for ``data`` at once; a :class:`CodecError` carries what decoded before it."""
    out: list[bytes] = []
    try:
        for piece in decoder.chunks(data):
            out.append(piece)
    except CodecError as exc:
        exc.partial = b"".join(out)
        raise
    return b"".join(out)


def zstandard_module() -> Any:
    """The ``zstandard`` package, or a :class:`CodecError` saying how to install it."""
    try:
        import zstandard
    except ImportError:  # pragma: no cover
        raise CodecError("reading .zst files needs the 'zstandard' package (pip install zstandard)") from None
    return zstandard


def file_decoder(path: str) -> Decoder:
    """The decoder a file's suffix asks for: ``.gz`` gzip, ``.zst``/``.zstd`` zstandard, anything else plain."""
    if path.endswith(".gz"):
        return GzipDecoder()
    if path.endswith((".zst", ".zstd")):
        return ZstdDecoder(zstandard_module())
    return PlainDecoder()
