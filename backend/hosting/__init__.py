"""Hosting the runtime's workers somewhere other than threads of one process."""
