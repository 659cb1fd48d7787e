"""The live path: a running application's events (listeners, the socket feed, its journal) and followed event logs."""
