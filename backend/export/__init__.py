"""A session made portable: the one-file HTML bundle of a replayed log."""
