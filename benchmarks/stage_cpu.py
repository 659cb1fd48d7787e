"""The floor of each stage that brings a Spark event log to its full state, in one process.

Why: ``flowscope frontiers`` and ``blame`` split the work over processes (reading and decoding, the Spark model,
the replay: ``backend.spark.recording.convert_process``); the CPU seconds of each stage alone, measured here without
pipes or children, bound what that split can reach. Their sum is the lower bound on time-to-full-state in one process,
and half of it the lower bound on two cores; compare those with the History Server's time on the same log
(``replay_vs_history_server.py``) and with the commands' wall time (``blame_overhead.py --commands``).

Stages, each timed alone (CPU seconds, ``time.process_time``):

* read: the log's lines found (decompression, line splitting, counting), no JSON decoded;
* decode: the lines decoded by the model's decoder (``backend.spark.model.event_fields.model_decoder``): reading and
  decoding together, less ``read``;
* model: the decoded events fed to ``SparkModel`` (its records kept);
* replay: the records applied to a ``Replay`` and settled.

Then, per event type (the top ``--types`` by total decode time), the decode microseconds per event, measured on
up to ``--sample`` lines of that type kept from a separate, untimed pass.

    .venv/bin/python benchmarks/stage_cpu.py LOG
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from flowscope.cli import tune_collector  # noqa: E402

tune_collector()  # as every flowscope process does

from backend.eventlog import EventLogReader  # noqa: E402
from backend.eventlog.decode import WholeEvent  # noqa: E402
from backend.spark.model.event_fields import model_decoder  # noqa: E402
from backend.spark.model.spark_model import SparkModel  # noqa: E402
from backend.spark.recording.convert import open_event_log  # noqa: E402
from tracker.progress_log.replay import Replay  # noqa: E402

_PREFIX = b'{"Event":"'


def event_type(raw: bytes) -> str:
    """The event type a line names at its start (Spark writes ``{"Event":"..."`` first), else ``?``."""
    if raw.startswith(_PREFIX):
        end = raw.find(b'"', len(_PREFIX))
        if end > 0:
            return raw[len(_PREFIX):end].decode("utf-8", "replace")
    return "?"


def read_only(log) -> tuple[float, int]:
    """CPU seconds to find every line, decoding none (each line becomes the same empty object)."""
    empty: dict = {}
    t0 = time.process_time()
    n = sum(1 for _ in EventLogReader(log, decode=lambda raw: empty))
    return time.process_time() - t0, n


def samples(log, per_type: int) -> tuple[Counter, dict[str, list[bytes]]]:
    """Untimed: how many lines of each type, and up to ``per_type`` of each kept."""
    counts: Counter = Counter()
    kept: dict[str, list[bytes]] = {}
    empty: dict = {}

    def keep(raw: bytes) -> dict:
        kind = event_type(raw)
        counts[kind] += 1
        lines = kept.setdefault(kind, [])
        if len(lines) < per_type:
            lines.append(bytes(raw))
        return empty

    for _ in EventLogReader(log, decode=keep):
        pass
    return counts, kept


def decode_us(lines: list[bytes], decode) -> float:
    """Microseconds per line to decode ``lines`` (repeated to at least ~0.05 s of CPU)."""
    rounds, spent = 0, 0.0
    t0 = time.process_time()
    while spent < 0.05:
        for raw in lines:
            decode(raw)
        rounds += 1
        spent = time.process_time() - t0
    return 1e6 * spent / (rounds * len(lines))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("log", type=Path, help="a Spark event log (a file or a rolling directory, any codec)")
    ap.add_argument("--types", type=int, default=8, help="event types listed with their decode cost")
    ap.add_argument("--sample", type=int, default=2000, help="lines of each type timed for its decode cost")
    args = ap.parse_args(argv)
    log = open_event_log(args.log)

    read_s, lines = read_only(log)
    t0 = time.process_time()
    events = [(ev.event, ev.line) for ev in EventLogReader(log, decode=model_decoder())]
    read_decode_s = time.process_time() - t0

    model = SparkModel()
    records: list[dict] = []
    t0 = time.process_time()
    for event, line in events:
        out = model.feed(event, line, type(event) is not WholeEvent)
        if out:
            records.extend(out)
    model_s = time.process_time() - t0
    del events

    replay = Replay(str(log.path), checked_records=True)
    t0 = time.process_time()
    for rec in records:
        replay.apply(rec, None)
    replay.finish()
    replay_s = time.process_time() - t0

    decode_s = read_decode_s - read_s
    total = read_s + decode_s + model_s + replay_s
    print(f"log: {args.log} ({lines:,} lines, {len(records):,} records)")
    for name, s in (("read", read_s), ("decode", decode_s), ("model", model_s), ("replay", replay_s)):
        print(f"  {name:<7} {s:6.2f} s CPU  {100 * s / total:3.0f}%")
    print(f"  sum     {total:6.2f} s CPU: the floor in one process; on two cores {total / 2:.2f} s")

    counts, kept = samples(log, args.sample)
    decode = model_decoder()
    costs = {kind: decode_us(lines_, decode) for kind, lines_ in kept.items()}
    top = sorted(costs, key=lambda k: -costs[k] * counts[k])[:args.types]
    print(f"decode per event type (top {len(top)} by total):")
    for kind in top:
        print(f"  {kind.rsplit('.', 1)[-1]:<36} {counts[kind]:>9,} events  {costs[kind]:7.2f} us each  "
              f"{costs[kind] * counts[kind] / 1e6:6.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
