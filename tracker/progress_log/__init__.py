"""The progress log: its records, reading and writing them (every codec), paged storage, and the replay into the
tracker."""
