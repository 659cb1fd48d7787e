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
    for doc in (readme, (REPO / "docs" / "cli.md").read_text()):
        for log in re.findall(r"fixtures/[\w./-]+", doc):
            assert (REPO / log).exists(), log


def test_every_synopsis_matches_its_commands_help(capsys):
    """Each command's lines in docs/cli.md (``flowscope CMD ...`` in code blocks) name only options its ``--help`` has,
    and together name every option it has: the documented synopses are what the parser takes."""
    import pytest

    from flowscope.cli import main

    option = r"(?<![\w-])(--?[a-z][a-z-]*)"
    named: dict[str, set[str]] = {}
    fenced, command = False, None
    for line in (REPO / "docs" / "cli.md").read_text().splitlines():
        if line.startswith("```"):
            fenced, command = not fenced, None
            continue
        m = re.match(r"flowscope ([a-z-]+)(.*)", line) if fenced else None
        if m:
            command, line = m[1], m[2]
        elif not (fenced and command and line.startswith(" ")):  # a synopsis' continuation line is indented
            command = None
            continue
        named.setdefault(command, set()).update(re.findall(option, line.split("#")[0]))
    assert {"frontiers", "explain", "blame", "replay", "serve", "record", "fleet", "bundle"} <= set(named)
    for command, options in named.items():
        with pytest.raises(SystemExit):
            main([command, "--help"])
        usage = capsys.readouterr().out.split("\n\n")[0]  # the usage lines: every option, none suppressed
        has = set(re.findall(option, usage)) - {"-h"}
        assert options <= has, (command, options - has)
        if command not in ("demo", "listener-jar"):  # named in passing, without a synopsis
            assert has <= options, (command, has - options)
