"""Progress logs for the backend and browser tests, generated (contract-valid unless said otherwise)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from tracker.progress_log.log_file import ProgressLogWriter

T0 = 1_767_225_600.0
HEADER = {"type": "header", "format": "flowscope-progress", "version": 1, "source": "tests"}


def pipeline_records(operators: int = 10, epochs: int = 20, in_flight: int = 3, workers: int = 1,
                     tick: float = 0.001, header: bool = True) -> Iterator[dict]:
    """A chain input -> stage ... -> sink in the root scope; each epoch's record moves one stage per step,
    ``in_flight`` epochs at once. Batches alternate between ``workers`` (each holds the input capability once)."""
    n = operators
    if header:
        yield dict(HEADER)
    yield {"type": "operator", "scope": [], "node": 1, "name": "input", "inputs": 0, "outputs": 1,
           "capabilities": [[0] * workers], "attrs": {"kind": "source"}}
    for k in range(2, n):
        yield {"type": "operator", "scope": [], "node": k, "name": f"stage {k}", "inputs": 1, "outputs": 1}
    yield {"type": "operator", "scope": [], "node": n, "name": "sink", "inputs": 1, "outputs": 0}
    for k in range(1, n):
        yield {"type": "edge", "scope": [], "from": ["out", k, 0], "to": ["in", k + 1, 0]}
    seq = [0] * workers
    clock = [T0]

    def batch(updates: list, w: int, cause: str) -> dict:
        clock[0] += tick
        rec = {"type": "progress", "scope": [], "worker": w, "seq": seq[w], "at": round(clock[0], 6),
               "updates": updates, "cause": {"operator": cause}}
        seq[w] += 1
        return rec

    live: list[list[int]] = []  # [epoch, stage the record waits at]
    next_epoch = 0
    step = 0
    spacing = max(1, (n - 1) // in_flight)
    while next_epoch < epochs or live:
        if next_epoch < epochs and step % spacing == 0:
            e = next_epoch
            for w in range(workers):
                ups = [[["out", 1, 0], e, -1]]
                if e + 1 < epochs:
                    ups.append([["out", 1, 0], e + 1, 1])
                if w == 0:
                    ups.append([["in", 2, 0], e, 1])
                yield batch(ups, w, "input")
            yield {"type": "mark", "at": clock[0], "label": f"epoch {e} started", "scope": []}
            live.append([e, 2])
            next_epoch += 1
        still = []
        for rec in live:
            e, k = rec
            w = (e + k) % workers
            if k < n:
                yield batch([[["in", k, 0], e, -1], [["in", k + 1, 0], e, 1]], w, f"stage {k}")
                rec[1] = k + 1
                still.append(rec)
            else:
                yield batch([[["in", n, 0], e, -1]], w, "sink")
        live = still
        step += 1


def write_records(path: Path, records) -> Path:
    with ProgressLogWriter(path) as log:
        first = True
        for r in records:
            if first and r.get("type") == "header":
                first = False
                continue
            first = False
            log.write(r)
    return path


def write_pipeline(path: Path, operators: int = 10, epochs: int = 20, **kw) -> Path:
    return write_records(path, pipeline_records(operators, epochs, **kw))


def growing_records() -> Iterator[dict]:
    """Two workers (alternating), a nested iterative scope, structure added after progress started, marks."""
    yield dict(HEADER)
    yield {"type": "operator", "scope": [], "node": 1, "name": "source", "inputs": 0, "outputs": 1,
           "capabilities": [[0]]}
    yield {"type": "scope", "path": [2], "name": "iterate", "inputs": 1, "outputs": 1, "depth": 2}
    yield {"type": "operator", "scope": [2], "node": 1, "name": "body", "inputs": 2, "outputs": 1}
    yield {"type": "operator", "scope": [2], "node": 2, "name": "back", "inputs": 1, "outputs": 2,
           "summary": [[[[0, 1]], [[0, 0]]]]}
    for rec in (([2], ["out", 0, 0], ["in", 1, 0]), ([2], ["out", 1, 0], ["in", 2, 0]),
                ([2], ["out", 2, 0], ["in", 1, 1]), ([2], ["out", 2, 1], ["in", 0, 0]),
                ([], ["out", 1, 0], ["in", 2, 0])):
        yield {"type": "edge", "scope": rec[0], "from": rec[1], "to": rec[2]}
    clock = [T0]
    seq = [0, 0]

    def batch(scope, updates, w):
        clock[0] += 0.01
        seq[w] += 1
        return {"type": "progress", "scope": scope, "worker": w, "seq": seq[w], "at": round(clock[0], 3),
                "updates": updates}

    for e in range(6):
        if e == 3:  # the dataflow grows: a sink appears after progress started
            yield {"type": "operator", "scope": [], "node": 3, "name": "late sink", "inputs": 1, "outputs": 0}
            yield {"type": "edge", "scope": [], "from": ["out", 2, 0], "to": ["in", 3, 0]}
            yield {"type": "mark", "at": clock[0], "label": "sink attached"}
        w = e % 2
        ups = [[["out", 1, 0], e, -1], [["in", 2, 0], e, 1]]
        if e < 5:
            ups.append([["out", 1, 0], e + 1, 1])
        yield batch([], ups, w)
        yield batch([2], [[["out", 0, 0], [e, 0], -1], [["in", 1, 0], [e, 0], 1]], w)
        for i in range(2):
            yield batch([2], [[["in", 1, i and 1], [e, i], -1], [["in", 2, 0], [e, i], 1]], w)
            if i == 0:
                yield batch([2], [[["in", 2, 0], [e, i], -1], [["in", 1, 1], [e, i + 1], 1]], w)
            else:
                yield batch([2], [[["in", 2, 0], [e, i], -1], [["in", 0, 0], [e, i], 1]], w)
        if e >= 3:
            yield batch([], [[["in", 3, 0], e, -1]], w)
        yield {"type": "mark", "at": clock[0], "label": f"epoch {e} done"}


def bad_log(path: Path) -> Path:
    """A log with a contract violation (a capability out of nothing), a corrupt line and a rejected batch."""
    lines = [
        '{"type":"header","format":"flowscope-progress","version":1}',
        '{"type":"operator","scope":[],"node":1,"name":"input","inputs":0,"outputs":1,"capabilities":[[0]]}',
        '{"type":"operator","scope":[],"node":2,"name":"map","inputs":1,"outputs":1}',
        '{"type":"edge","scope":[],"from":["out",1,0],"to":["in",2,0]}',
        '{"type":"progress","scope":[],"worker":0,"seq":0,"at":1.0,"updates":[[["in",2,0],0,1],[["out",1,0],0,-1],[["out",1,0],1,1]]}',
        '{"type":"progress","scope":[],"worker":0,"seq":1,"at":2.0,"updates":[[["out",2,0],0,1]]}',
        '{"type":"progress", this is not json',
        '{"type":"progress","scope":[],"worker":0,"seq":2,"at":3.0,"updates":[[["in",9,0],0,1]]}',
        '{"type":"progress","scope":[],"worker":0,"seq":3,"at":4.0,"updates":[[["in",2,0],0,-1]]}',
    ]
    path.write_text("\n".join(lines) + "\n")
    return path
