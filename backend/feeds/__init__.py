"""What feeds a session.

Progress logs read whole or followed as they grow, pushed records, and the registry that turns a path into a feed."""
