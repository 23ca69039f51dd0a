"""The command line as the docs show it is the command line argparse reads: docs/operating.md's
table of every option has one row per option and help text, with the verbs that take it, as
``--help`` prints them (the usage, the choices, the help words), and every option another
table there, README.md or docs/clients.md names is one some verb takes. A flag added, renamed
or re-worded in the parser without the doc (or the other way round) fails here."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from mcp_toolbridge.cli.parsing import POLICY_SHOW, VERBS, _parser

ROOT = Path(__file__).resolve().parents[2]
OPERATING = ROOT / "docs" / "operating.md"
HEADING = "## Every command-line option"
ROW = re.compile(r"^\| `(?P<usage>[^`]+)` \| (?P<verbs>[^|]+) \| (?P<help>.*) \|$")
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]+")


def _verb_parsers() -> dict[str, argparse.ArgumentParser]:
    _, verbs = _parser()
    names = [*(v for v in VERBS if v != "policy"), POLICY_SHOW]
    return {name: verbs[name] for name in names}


def _usage(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    return parser._get_formatter()._format_action_invocation(action)  # as --help shows it


def expected_rows() -> list[tuple[str, str, str]]:
    """(usage, verbs, help) for every option and positional of every verb, as argparse has
    them, one row per usage and help, in the order of the verbs."""
    found: dict[tuple[str, str], list[str]] = {}
    for verb, parser in _verb_parsers().items():
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            help_text = " ".join((action.help or "").split())
            found.setdefault((_usage(parser, action), help_text), []).append(verb)
    return [(usage, ", ".join(verbs), text) for (usage, text), verbs in found.items()]


def documented_rows() -> list[tuple[str, str, str]]:
    text = OPERATING.read_text(encoding="utf-8")
    assert HEADING in text, f"{OPERATING.name} has no section {HEADING!r}"
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if (match := ROW.match(line)) is not None:
            rows.append((match["usage"], match["verbs"].strip(), match["help"].strip()))
    return rows


def render_table() -> str:
    """The table the section holds (print it to update the doc)."""
    lines = ["| option | verbs | meaning (as `--help` says it) |", "| --- | --- | --- |"]
    lines += [f"| `{u}` | {v} | {h.replace('|', '/')} |" for u, v, h in expected_rows()]
    return "\n".join(lines)


def test_the_operating_docs_table_is_every_option_as_help_prints_it() -> None:
    documented = documented_rows()
    expected = expected_rows()
    missing = [row for row in expected if row not in documented]
    stale = [row for row in documented if row not in expected]
    assert not missing and not stale, (
        f"docs/operating.md ({HEADING}) differs from argparse:\nmissing: {missing}\n"
        f"stale: {stale}\nthe table as it should be:\n{render_table()}"
    )


def test_every_option_the_docs_name_in_a_table_is_one_a_verb_takes() -> None:
    """The hand-written tables (operating.md's HTTP flags, clients.md's) name real options."""
    known = {
        option
        for parser in _verb_parsers().values()
        for action in parser._actions
        for option in action.option_strings
    }
    named: set[tuple[str, str]] = set()
    for doc in (ROOT / "README.md", OPERATING, ROOT / "docs" / "clients.md"):
        for line in doc.read_text(encoding="utf-8").splitlines():
            if line.startswith(("| `--", "| `mcp-toolbridge")):
                first = line.split("|")[1]
                named.update((doc.name, option) for option in OPTION.findall(first))
    unknown = sorted((doc, option) for doc, option in named if option not in known)
    assert named, "no option found in the docs' tables"
    assert not unknown, f"options the docs' tables name that no verb takes: {unknown}"


def test_the_index_lists_every_verb() -> None:
    """docs/index.md's table of the verbs had neither doctor nor console-url."""
    text = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    section = text.split("## The verbs", 1)[1].split("\n## ", 1)[0]
    listed = {
        line.split("`")[1].split()[0] for line in section.splitlines() if line.startswith("| `")
    }
    assert listed == set(VERBS), f"missing: {set(VERBS) - listed}, not verbs: {listed - set(VERBS)}"
