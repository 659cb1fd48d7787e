"""A session: one feed replayed live, its history for seeking, its charts, and the fan-out to each browser."""
