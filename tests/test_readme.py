"""The README's quick start is what CI runs, and what it names exists."""

from __future__ import annotations

import re

from .conftest import REPO


def code_lines(text):
    return [line for block in re.findall(r"```\n(.*?)```", text, re.S) for line in block.splitlines()]


def test_ci_runs_the_readme_test_command_exactly():
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    tests_cmd = next(line for line in code_lines(readme) if "pytest" in line)
    assert tests_cmd in ci.splitlines()


def test_quick_start_main_job_is_the_demo_and_named_logs_exist():
    readme = (REPO / "README.md").read_text()
    main_cmd = next(line for line in code_lines(readme) if "flowscope " in line and "venv" in line)
    assert main_cmd.endswith("flowscope demo"), main_cmd
    from flowscope.cli import build_parser

    assert build_parser("demo").parse_args(["demo"]).func.__module__ == "flowscope.commands.demo"
    for log in re.findall(r"fixtures/[\w./-]+", readme):
        assert (REPO / log).exists(), log
