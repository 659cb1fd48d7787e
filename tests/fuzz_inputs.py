"""A seeded mutator over the shipped fixtures, shared by tests/test_hardening.py (a few hundred cases) and
benchmarks/fuzz_readers.py (as many as asked for).

Each mutation damages a log the way a careless tool or an attacker would: bit flips, truncation, a field of the
wrong type, huge numbers, deep nesting, a damaged codec stream. What the readers must do with any of them: report
what is wrong, with the file and line, and go on; never a traceback.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path
from typing import Any

import orjson
import zstandard

ROOT = Path(__file__).resolve().parent.parent
PROGRESS_FIXTURE = ROOT / "fixtures" / "progress" / "loop.jsonl"
SPARK_FIXTURES = sorted((ROOT / "fixtures" / "spark").glob("*/eventlog_v2_*/events_1_*.zstd"))

HOSTILE_VALUES: list[Any] = [None, "x", [], {}, [[[[1]]]], 1 << 64, -(1 << 70), 1e308, True, "9" * 30, [1, 2, 3, 4, 5]]


def _deep(n: int) -> object:
    v: object = 0
    for _ in range(n):
        v = [v]
    return v


def mutate_record(rng: random.Random, record: dict) -> dict:
    """One field of ``record`` (or of a dict inside it) replaced by a hostile value."""
    try:
        rec = orjson.loads(orjson.dumps(record))
    except (TypeError, orjson.JSONDecodeError):  # nested deeper than orjson goes (a line mutated twice)
        rec = _loads_loose(_dumps_loose(record))
    target = rec
    for _ in range(rng.randrange(3)):
        inner = [v for v in target.values() if isinstance(v, dict)]
        if not inner:
            break
        target = rng.choice(inner)
    if not target:
        return rec
    key = rng.choice(sorted(target, key=str))
    choice = rng.randrange(4)
    if choice == 0:
        target[key] = _deep(rng.choice([70, 300, 1000]))
    else:
        target[key] = rng.choice(HOSTILE_VALUES)
    return rec


def mutate_lines(rng: random.Random, lines: list[bytes]) -> list[bytes]:
    """A copy of ``lines`` with one to three damaged (never the first: that is what makes a log a log)."""
    out = list(lines)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(1, len(out))
        kind = rng.randrange(5)
        try:
            record = orjson.loads(out[i])
        except orjson.JSONDecodeError:
            record = None
        if kind <= 2 and isinstance(record, dict):
            out[i] = _dumps_loose(mutate_record(rng, record))
        elif kind == 3:  # bit flips
            b = bytearray(out[i])
            for _ in range(rng.randint(1, 4)):
                if b:
                    j = rng.randrange(len(b))
                    b[j] ^= 1 << rng.randrange(8)
            out[i] = bytes(b).replace(b"\n", b" ")
        else:  # cut short
            out[i] = out[i][: rng.randrange(len(out[i]) + 1)]
    return out


def _dumps_loose(obj: object) -> bytes:
    """JSON for any value, big integers included (orjson refuses those; the json module does not)."""
    import json
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 5000))
    try:
        return json.dumps(obj, separators=(",", ":")).encode()
    finally:
        sys.setrecursionlimit(limit)


def _loads_loose(data: bytes) -> object:
    import json
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 5000))
    try:
        return json.loads(data)
    finally:
        sys.setrecursionlimit(limit)


def compress(rng: random.Random, data: bytes, suffix: str) -> bytes:
    if suffix == ".gz":
        return gzip.compress(data)
    if suffix == ".zst":  # several frames, like a log flushed as it was written
        cuts = sorted(rng.sample(range(1, max(2, len(data))), k=min(3, max(1, len(data) - 1))))
        parts = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        return b"".join(zstandard.ZstdCompressor().compress(p) for p in parts)
    return data


def damage_stream(rng: random.Random, blob: bytes) -> bytes:
    """Truncate the compressed bytes, or overwrite a stretch of them."""
    if rng.random() < 0.5:
        return blob[: rng.randrange(1, len(blob))]
    b = bytearray(blob)
    start = rng.randrange(len(b))
    for j in range(start, min(len(b), start + rng.randint(1, 64))):
        b[j] = rng.randrange(256)
    return bytes(b)


def progress_mutation(rng: random.Random, n: int) -> tuple[str, bytes, bytes]:
    """Case ``n``: a damaged copy of the progress fixture, plain or compressed (sometimes with the codec damaged):
    its file name, its content before compression, and the file's bytes."""
    lines = PROGRESS_FIXTURE.read_bytes().splitlines()
    data = b"\n".join(mutate_lines(rng, lines)) + b"\n"
    suffix = rng.choice([".jsonl", ".jsonl", ".gz", ".zst"])
    name = f"case{n}.jsonl" if suffix == ".jsonl" else f"case{n}.jsonl{suffix}"
    blob = compress(rng, data, suffix)
    if suffix != ".jsonl" and rng.random() < 0.4:
        blob = damage_stream(rng, blob)
        data = _clean_content(blob, suffix) or data
    return name, data, blob


def _clean_content(blob: bytes, suffix: str) -> bytes | None:
    """What damaged compressed bytes hold if they still decode without error (a cut between two frames or members
    leaves a valid, shorter file: no reader can tell), else None."""
    import io

    try:
        if suffix == ".gz":
            return gzip.decompress(blob)
        return zstandard.ZstdDecompressor().stream_reader(io.BytesIO(blob), read_across_frames=True).read()
    except Exception:  # EOFError, BadGzipFile, zlib.error, ZstdError: the damage shows
        return None


def progress_case(rng: random.Random, directory: Path, n: int) -> Path:
    """Case ``n`` (see :func:`progress_mutation`) written to ``directory``."""
    name, _, blob = progress_mutation(rng, n)
    path = directory / name
    path.write_bytes(blob)
    return path


def spark_mutation(rng: random.Random, n: int) -> tuple[str, bytes]:
    """Case ``n``: a damaged copy of one shipped Spark event log (plain JSON lines): its file name and bytes."""
    src = rng.choice(SPARK_FIXTURES)
    data = zstandard.ZstdDecompressor().decompressobj().decompress(src.read_bytes())
    lines = data.splitlines()
    return f"spark{n}", b"\n".join(mutate_lines(rng, lines)) + b"\n"


def spark_case(rng: random.Random, directory: Path, n: int) -> Path:
    """Case ``n`` (see :func:`spark_mutation`) written to ``directory``."""
    name, data = spark_mutation(rng, n)
    path = directory / name
    path.write_bytes(data)
    return path
