"""The JSON views of a session: port rows, the scope tree, the session's info, operator search, scope paths.

The session (backend/sessions/session.py) ingests; these functions only read. Each takes the objects it shows (a
scope, a
session) and returns plain lists and dicts the API and the stream send as they are, so a view can be tested
without a server and the ingest loop never grows a reading method for each new screen.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tracker.reachability import IN, Location
from tracker.subgraph import Subgraph

if TYPE_CHECKING:
    from backend.sessions.session import Session

__all__ = ["port_rows", "scope_tree", "session_info", "search", "parse_scope", "parse_port", "mark_json",
           "finding_opens_at", "finding_port", "FINDING_FIELDS"]

# What a finding mark (backend/spark/diagnosis/tasks.py: a straggler or a skewed stage;
# backend/spark/diagnosis/findings.py: the
# findings that say what to do) carries beyond a plain mark: the graph's badges and the finding's panel show them.
FINDING_FIELDS = ("finding", "node", "time", "stage", "attempt", "task", "index", "partition", "executor",
                  "duration_s", "median_task_s", "records", "bytes", "ended_at", "summary",
                  # the findings that say what to do (backend/spark/diagnosis/findings.py)
                  "batch", "recommendation", "metric", "threshold", "stage_name")


def completed_time(mark: dict) -> Any:
    """The time of its scope that a mark says completed, which blame splits (``GET .../blame?scope=&time=``).

    A finished job's epoch (its mark carries the job's status), a micro-batch's id (its ``batch N done`` mark, with the
    trigger's start); None for any other mark."""
    if "status" in mark and "job" in mark and mark.get("epoch") is not None:
        return mark["epoch"]
    if "trigger_start" in mark and mark.get("batch") is not None:
        return mark["batch"]
    return None


# how long before a straggler's end the page shows it: the last batch before it ended, the straggler still running
BEFORE_END_S = 0.001


def finding_opens_at(mark: dict) -> float | None:
    """The wall time at which the page opens a finding mark, or None.

    ``GET .../state?at=`` turns it into a batch, as ``History.batch_at_time`` counts. A straggler's is just before its
    end (``ended_at``), while it still held its stage's time; any other mark is opened at its own batch (``after``).
    frontend/js/navigation/routing.js ``openFinding`` mirrors it; ``flowscope bundle`` stores the moment it gives."""
    end = mark.get("ended_at")
    if mark.get("finding") == "straggler" and isinstance(end, (int, float)) and not isinstance(end, bool):
        return end - BEFORE_END_S
    return None


def finding_port(mark: dict) -> list | None:
    """The port the page selects when it opens a finding mark: its stage's output.

    For a straggler the page also explains it for the finding's ``time``. frontend/js/navigation/routing.js
    ``openFinding`` mirrors it."""
    node = mark.get("node")
    return ["out", node, 0] if node is not None else None


def mark_json(mark: dict) -> dict:
    """A timeline mark as the API and the stream send it.

    Label, wall time, the batches before it, its scope, the time it completes there (:func:`completed_time`), and a
    finding's details (``FINDING_FIELDS``) when it is one, and an "events lost" mark's ``lost`` count and
    ``lost_until``."""
    out = {"label": str(mark.get("label", "")), "at": mark.get("at"), "after": mark.get("after", 0)}
    scope = mark.get("scope")
    if isinstance(scope, list):
        out["scope"] = scope
        done = completed_time(mark)
        if done is not None:
            out["completes"] = done
    if isinstance(mark.get("finding"), str):
        for k in FINDING_FIELDS:
            if k in mark:
                out[k] = mark[k]
    if type(mark.get("lost")) is int:  # events that never arrived (a live listener's outage): a stretch to draw
        out["lost"] = mark["lost"]
        out["lost_until"] = mark.get("lost_until", mark.get("at"))
    return out


def parse_scope(text: str | None) -> tuple:
    """``""`` or ``None`` is the root; ``"3"`` or ``"3,1"`` (or JSON ``[3,1]``) a nested scope path.

    The one parser of a scope path: the REST API's ``scope=`` and the CLI's ``--scope`` take the same forms."""
    if text is None:
        return ()
    steps = text.strip().strip("[]").replace(".", ",").replace("/", ",")
    if not steps.strip():
        return ()
    try:
        return tuple(int(p) for p in steps.split(","))
    except ValueError:
        raise ValueError(f"scope {text!r} is not a path of child indices like 3 or 3,1 (or [3,1])") from None


def parse_port(text: str) -> Location:
    """``"in,4,0"`` (or JSON ``["in",4,0]``) as a port; the REST API's ``port=`` and the CLI's ``--port``."""
    try:
        kind, node, port = (p.strip() for p in text.strip().strip("[]").replace('"', "").split(","))
        return Location.from_json([kind, int(node), int(port)])
    except ValueError:
        raise ValueError(f"port {text!r}: give in,NODE,PORT or out,NODE,PORT") from None


def port_rows(scope: Subgraph, locations: Iterable[Location] | None = None) -> list[list]:
    """Ports as ``[kind, node, port, frontier, pointstamps, implications]`` rows (all ports, or ``locations``)."""
    scope.ensure_built()
    tracker = scope.tracker
    assert tracker is not None  # built just above
    locs = tracker.locations
    if locations is None:
        ks: Iterable[int] = range(len(locs))
    else:
        index = tracker.index
        ks = sorted(k for k in (index.get(loc) for loc in locations) if k is not None)
    implications, pointstamps = tracker.implications, tracker.pointstamps
    rows = []
    for k in ks:
        node, kind, port = locs[k]
        imp = implications[k]
        rows.append(["in" if kind == IN else "out", node, port, imp.frontier(), pointstamps[k].update_rows(),
                     imp.update_rows()])
    return rows


def scope_tree(scope: Subgraph) -> dict:
    """``scope`` and its nested scopes as a tree: name, depth, boundary ports and how many operators each holds."""
    children = []
    leaves, folded = 0, scope.dropped
    for node in sorted(scope.children):
        op = scope.children[node]
        if op.scope is not None:
            children.append(scope_tree(op.scope))
        elif op.retired:
            folded += 1
        else:
            leaves += 1
    return {
        "path": list(scope.path),
        "name": scope.name,
        "depth": scope.domain.depth,
        "operators": leaves,
        "inputs": scope.inputs,
        "outputs": scope.outputs,
        "scopes": children,
        "folded": folded,  # finished nested scopes folded out of the live state (seek back to see them)
    }


def search(root: Subgraph, query: str, limit: int = 50) -> list[dict]:
    """Operators whose name contains ``query`` (or whose node index is ``query``), in every scope under ``root``."""
    q = query.lower().strip()
    out: list[dict] = []
    if not q:
        return out
    for sc in root.scopes():
        for node in sorted(sc.children):
            op = sc.children[node]
            if q in op.name.lower() or q == str(node):
                out.append({"scope": list(sc.path), "scope_name": sc.name, "node": node, "name": op.name,
                            "nested": op.scope is not None})
                if len(out) >= limit:
                    return out
    return out


def session_info(session: Session) -> dict[str, Any]:
    """What the session list shows: the source, the ingest's status and how much it has read and found."""
    h = session.history
    replay = session.replay
    operators = scopes = 0
    for sc in replay.root.scopes():
        scopes += 1
        operators += sum(1 for op in sc.children.values() if op.scope is None and not op.retired)
    feed = session.feed
    return {
        "id": session.id,
        "name": session.name,
        "kind": feed.kind,
        "source": feed.label,
        "live": feed.live,
        "status": session.status,
        "error": session.error,
        "created": session.created,
        "records": session.records,
        "batches": session.head,
        "first_at": h.at[0] if len(h.at) else None,
        "last_at": h.at_max[-1] if len(h.at_max) else None,
        "errors": len(feed.errors) + len(replay.errors),
        "findings": len(replay.findings),
        "marks": len(replay.marks),
        "scopes": scopes,
        "operators": operators,
        "folded": replay.folded,
        "checked": session.options.check_contracts,
        # a live Spark feed: events it never received (listener outages, full queues), and whether it is connected
        "events_lost": getattr(feed, "events_lost", 0),
        "connected": getattr(feed, "connected", None),
    }
