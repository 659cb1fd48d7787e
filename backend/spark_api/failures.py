"""Why a task attempt did not succeed, in Spark's words: a task's ``errorMessage`` and the keys of
``killedTasksSummary``, made from the ``"Task End Reason"`` of its end event (Spark's ``TaskEndReason.toErrorString``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["error_message", "killed_reason"]


def _frame(f: Mapping[str, Any]) -> str:
    where = f"{f.get('Declaring Class')}.{f.get('Method Name')}"
    file, line = f.get("File Name"), f.get("Line Number", -1)
    if line == -2:
        return f"{where}(Native Method)"
    if file is None:
        return f"{where}(Unknown Source)"
    return f"{where}({file}:{line})" if isinstance(line, int) and line >= 0 else f"{where}({file})"


def killed_reason(reason: Mapping[str, Any]) -> str:
    """The key a killed (or commit-denied) attempt counts under in ``killedTasksSummary``."""
    if reason.get("Reason") == "TaskCommitDenied":
        return error_message(reason) or ""
    return reason.get("Kill Reason") or "unknown reason"


def error_message(reason: Mapping[str, Any]) -> str | None:
    """A failed or killed attempt's ``errorMessage``; None for a success."""
    kind = reason.get("Reason")
    if kind == "Success":
        return None
    if kind == "TaskKilled":
        return reason.get("Kill Reason") or "unknown reason"
    if kind == "ExceptionFailure":
        full = reason.get("Full Stack Trace")
        if full is not None:
            return full
        frames = "\n".join("        " + _frame(f) for f in reason.get("Stack Trace") or ())
        return f"{reason.get('Class Name')}: {reason.get('Description') or ''}\n{frames}"
    if kind == "FetchFailed":
        bm = reason.get("Block Manager Address")
        where = "null" if not bm else \
            f"BlockManagerId({bm.get('Executor ID')}, {bm.get('Host')}, {bm.get('Port')}, None)"
        index = reason.get("Map Index")
        index_text = "Unknown" if index is None or index == -(2 ** 31) else str(index)
        return (f"FetchFailed({where}, shuffleId={reason.get('Shuffle ID')}, mapIndex={index_text}, "
                f"mapId={reason.get('Map ID')}, reduceId={reason.get('Reduce ID')}, "
                f"message=\n{reason.get('Message')}\n)")
    if kind == "TaskCommitDenied":
        return (f"TaskCommitDenied (Driver denied task commit) for job: {reason.get('Job ID')}, partition: "
                f"{reason.get('Partition ID')}, attemptNumber: {reason.get('Attempt Number')}")
    if kind == "ExecutorLostFailure":
        by_app = reason.get("Exit Caused By App", True)
        behaviour = "caused by one of the running tasks" if by_app else "unrelated to the running tasks"
        loss = reason.get("Loss Reason")
        return f"ExecutorLostFailure (executor {reason.get('Executor ID')} exited {behaviour})" + \
            (f" Reason: {loss}" if loss is not None else "")
    if kind == "TaskResultLost":
        return "TaskResultLost (result lost from block manager)"
    if kind == "Resubmitted":
        return "Resubmitted (resubmitted due to lost executor)"
    return "UnknownReason"
