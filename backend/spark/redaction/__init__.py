"""Redaction: a Spark event log without its machines and secrets, for sharing."""
