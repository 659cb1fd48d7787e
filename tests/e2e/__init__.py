"""Helpers for end-to-end tests: a real server on 127.0.0.1, generated logs, a headless browser."""
