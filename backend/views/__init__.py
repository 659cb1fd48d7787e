"""What the server shows of a session: JSON projections of the replay, graph layout, paths between ports, diffs."""
