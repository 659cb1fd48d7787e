"""The REST and WebSocket API, one router per resource (sessions, scopes, timeline, stream)."""
