"""A SQL execution's physical plan from the event log: its operators, their metrics, their stages, its findings.

``graph`` builds the plan graph from ``sparkPlanInfo`` (codegen stages as clusters, reused exchanges as shared
nodes, as Spark's SQL tab draws it); ``metrics`` keeps the tasks' and the driver's accumulator updates and
combines them per metric type; ``plans`` feeds a log's events to both and answers per execution; ``findings``
and ``operator_time`` read a finished plan. ``docs/sql-plan.md`` describes the model.
"""
