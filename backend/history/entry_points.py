"""Where a compressed event log can be decoded from the middle, so its end is read without decoding its start.

Spark's containers are sequences of independent units: zstd frames (Spark closes one at each flush), lz4-java's
``LZ4Block`` blocks, snappy-java's blocks and compress-lzf's ``ZV`` chunks each decode on their own with a fresh
decoder. Their headers say how long each unit is, so walking the headers (a few bytes read per unit, nothing
decompressed) finds where each starts. gzip has no such boundaries: :func:`unit_starts` says None and the reader
decodes the whole file.

The walk reads only what the container's format says (zstd's frame and block headers per RFC 8878, the three Java
containers' block headers as ``backend/eventlog/codecs.py`` decodes them); a header that makes no sense ends the walk
with the units found so far, and the reader then decodes from the last good one.
"""

from __future__ import annotations

import struct
from typing import BinaryIO

__all__ = ["unit_starts"]

_ZSTD_MAGIC = 0xFD2FB528
_SKIPPABLE_MASK, _SKIPPABLE = 0xFFFFFFF0, 0x184D2A50
_LE_U32 = struct.Struct("<I")
_LZ4_HEADER = struct.Struct("<8sBiii")  # magic, token, compressed length, raw length, checksum
_BE_U32 = struct.Struct(">I")
_SNAPPY_HEADER = 16
_MAX_UNITS = 1 << 22  # a walk stops here: a log of more units is decoded from the last one found


def unit_starts(codec: str | None, fh: BinaryIO, size: int) -> list[int] | None:
    """The byte offsets where the file's independent units start, in order; None where the codec has none."""
    walk = _WALKS.get(codec or "")
    if walk is None:
        return None
    starts: list[int] = []
    try:
        walk(fh, size, starts)
    except (struct.error, ValueError, OSError):
        pass  # a damaged or unfinished header: the units before it are still good
    return starts or [0]


def _read_at(fh: BinaryIO, offset: int, n: int) -> bytes:
    fh.seek(offset)
    data = fh.read(n)
    if len(data) < n:
        raise ValueError("short read")
    return data


def _zstd(fh: BinaryIO, size: int, starts: list[int]) -> None:
    pos = 0
    while pos < size and len(starts) < _MAX_UNITS:
        (magic,) = _LE_U32.unpack(_read_at(fh, pos, 4))
        if magic & _SKIPPABLE_MASK == _SKIPPABLE:
            (length,) = _LE_U32.unpack(_read_at(fh, pos + 4, 4))
            pos += 8 + length
            continue
        if magic != _ZSTD_MAGIC:
            raise ValueError("not a zstd frame")
        start = pos
        descriptor = _read_at(fh, pos + 4, 1)[0]
        fcs_flag, single, checksum, dict_flag = descriptor >> 6, (descriptor >> 5) & 1, (descriptor >> 2) & 1, \
            descriptor & 3
        header = 1 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag] + ((1 if single else 0), 2, 4, 8)[fcs_flag]
        pos += 4 + header
        while True:
            raw = _read_at(fh, pos, 3)
            block = raw[0] | (raw[1] << 8) | (raw[2] << 16)
            last, kind, length = block & 1, (block >> 1) & 3, block >> 3
            if kind == 3:
                raise ValueError("reserved zstd block type")
            pos += 3 + (1 if kind == 1 else length)
            if last:
                break
        pos += 4 if checksum else 0
        if pos > size:
            return  # the last frame is still being written: not a unit yet
        starts.append(start)


def _lz4(fh: BinaryIO, size: int, starts: list[int]) -> None:
    pos = 0
    while pos + _LZ4_HEADER.size <= size and len(starts) < _MAX_UNITS:
        magic, _token, clen, _rlen, _checksum = _LZ4_HEADER.unpack(_read_at(fh, pos, _LZ4_HEADER.size))
        if magic != b"LZ4Block" or clen < 0:
            raise ValueError("not an lz4 block")
        if pos + _LZ4_HEADER.size + clen > size:
            return
        starts.append(pos)
        pos += _LZ4_HEADER.size + clen


def _snappy(fh: BinaryIO, size: int, starts: list[int]) -> None:
    pos = _SNAPPY_HEADER  # the stream header; a fresh decoder reads blocks without it
    while pos + 4 <= size and len(starts) < _MAX_UNITS:
        head = _read_at(fh, pos, 4)
        if head[0] == 0x82:  # another stream's header
            pos += _SNAPPY_HEADER
            continue
        (length,) = _BE_U32.unpack(head)
        if pos + 4 + length > size:
            return
        starts.append(pos)
        pos += 4 + length


def _lzf(fh: BinaryIO, size: int, starts: list[int]) -> None:
    pos = 0
    while pos + 5 <= size and len(starts) < _MAX_UNITS:
        head = _read_at(fh, pos, 7 if pos + 7 <= size else 5)
        if head[:2] != b"ZV" or head[2] not in (0, 1):
            raise ValueError("not an lzf chunk")
        length = 5 + ((head[3] << 8) | head[4]) if head[2] == 0 else 7 + ((head[3] << 8) | head[4])
        if pos + length > size:
            return
        starts.append(pos)
        pos += length


_WALKS = {"zstd": _zstd, "lz4": _lz4, "snappy": _snappy, "lzf": _lzf}
