"""Spark applications as dataflows: their events as a model of scopes and batches, and what that model says.

``model/`` turns listener events into progress records; ``live/`` brings events from a running application (listeners,
the socket feed, the journal, followed logs); ``recording/`` writes a log as a progress log; ``redaction/`` strips a
log for sharing; ``diagnosis/`` and ``sql_plan/`` are the analyses on top (tasks, findings, blame, the cores what-if,
plans). ``barrier_hosting`` runs the runtime's workers as a barrier stage's tasks.
"""
