"""The ``flowscope`` subcommands, one module each: ``flowscope NAME`` lives in ``flowscope/commands/NAME.py``.

Each module has ``register(subparsers)``, which adds its subcommand and sets ``func`` to the function that runs
it. A module imports only argparse at the top: what a command needs (the tracker, the Spark readers, the web
server, PySpark) is imported when it runs, so ``flowscope frontiers`` starts without loading a web server, and
the CLI imports only the module of the command it was given.
"""

from __future__ import annotations

# subcommand -> the module that registers it, in the order ``flowscope --help`` lists them
COMMANDS = {
    "frontiers": "flowscope.commands.frontiers",
    "explain": "flowscope.commands.explain",
    "record": "flowscope.commands.record",
    "serve": "flowscope.commands.serve",
    "replay": "flowscope.commands.replay",
    "demo": "flowscope.commands.demo",
    "listener-jar": "flowscope.commands.listener_jar",
    "blame": "flowscope.commands.blame",
    "fleet": "flowscope.commands.fleet",
    "bundle": "flowscope.commands.bundle",
    "whatif": "flowscope.commands.whatif",
    "report": "flowscope.commands.report",
    "plan": "flowscope.commands.plan",
}

__all__ = ["COMMANDS"]
