"""``python -m backend.spark.listener [--rebuild]``: the same as ``flowscope listener-jar``."""

import argparse
import sys

from .cli import register

parser = argparse.ArgumentParser(prog="python -m backend.spark.listener")
register(parser.add_subparsers(dest="command"))
args = parser.parse_args(["listener-jar", *sys.argv[1:]])
sys.exit(args.func(args))
