"""The applications index: a followed directory's applications listed cheaply, kept in SQLite, replayed when opened."""
