"""Spark's monitoring REST API (``/api/v1``): the History Server's documents, made from a Spark application's events."""
