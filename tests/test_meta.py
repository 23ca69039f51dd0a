"""Promises about the repository itself, checked on its files.

- Every ``ErrorCode`` is produced by the package (some class or call site sets it), and every
  one is asserted by a test: it appears in an ``assert`` of some test module, and not merely
  as one of several codes an outcome may have (``code in {A, B}``). This is a static check:
  it proves a test pins the code, not which line produced it.
- Every ``ErrorCode`` has a row in docs/errors.md, and the table names no other code.
- Every relative link in README.md and docs/*.md leads to a file of the repository, and a
  ``#anchor`` to a heading of that file (GitHub's slugs).
- docs/architecture.md's tree names every package and top-level module, at its import level.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

from mcp_toolbridge.errors import ErrorCode
from tests.support.paths import ROOT
from tests.test_layering import LEVELS, PACKAGE

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

NOT_PRODUCED: dict[ErrorCode, str] = {}
"""Codes the package defines and reads but never sets, with why (docs/errors.md says so)."""


def _code_of(node: ast.AST) -> ErrorCode | None:
    """The code ``node`` names: ``ErrorCode.X`` or the literal ``"x.y"``."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "ErrorCode"
        and node.attr in ErrorCode.__members__
    ):
        return ErrorCode[node.attr]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return ErrorCode(node.value)
        except ValueError:
            return None
    return None


def _compared(tree: ast.AST) -> set[int]:
    """The ids of the nodes that are only compared against (``a == X``, ``X is a``)."""
    return {
        id(operand)
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        for operand in (node.left, *node.comparators)
    }


def _alternatives(test: ast.expr) -> set[int]:
    """The ids of the elements of ``x in {A, B, ...}`` (one of several codes allowed)."""
    found: set[int] = set()
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and any(
            isinstance(op, ast.In | ast.NotIn) for op in node.ops
        ):
            for options in node.comparators:
                if isinstance(options, ast.Set | ast.Tuple | ast.List) and len(options.elts) > 1:
                    found.update(id(element) for element in options.elts)
    return found


def _produced_codes() -> set[ErrorCode]:
    produced = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        compared = _compared(tree)
        for node in ast.walk(tree):
            code = _code_of(node) if isinstance(node, ast.Attribute) else None
            if code is not None and id(node) not in compared:
                produced.add(code)
    return produced


def _asserted_codes() -> dict[ErrorCode, list[str]]:
    asserted: dict[ErrorCode, list[str]] = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path == Path(__file__) or ".venv" in path.parts:  # the frameworks' virtualenv
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Assert):
                continue
            alternatives = _alternatives(node.test)
            for inner in ast.walk(node.test):
                code = _code_of(inner)
                if code is not None and id(inner) not in alternatives:
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    asserted.setdefault(code, []).append(where)
    return asserted


def test_every_error_code_is_produced_by_the_package() -> None:
    produced = _produced_codes()
    assert sorted(set(ErrorCode) - produced - set(NOT_PRODUCED)) == []
    assert sorted(produced & set(NOT_PRODUCED)) == [], "produced now: drop it from NOT_PRODUCED"


def test_every_error_code_is_asserted_by_a_test() -> None:
    asserted = _asserted_codes()
    assert [code.value for code in ErrorCode if code not in asserted] == []


def test_every_error_code_has_a_row_in_docs_errors_md() -> None:
    text = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    documented = set()
    for line in text.splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            documented.update(re.findall(r"`([a-z]+\.[a-z]+)`", first_cell))
    assert sorted(code.value for code in ErrorCode if code.value not in documented) == []
    assert sorted(documented - {code.value for code in ErrorCode}) == []


# Links


_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"(`+).+?\1")
_LINK = re.compile(
    r"""!?\[ (?:[^\[\]] | \[[^\]]*\])* \]   # [text], one level of nested brackets
        \( \s* (?: <([^>]*)> | ([^)\s]+) )    # (target) or (<target with spaces>)
        (?: \s+ "[^"]*" )? \s* \)            # an optional "title"
    """,
    re.VERBOSE,
)
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def _prose(text: str) -> Iterator[tuple[int, str]]:
    """Numbered lines outside fenced code blocks, inline code removed."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, _INLINE_CODE.sub("", line)


def _links(text: str) -> Iterator[tuple[int, str]]:
    for number, line in _prose(text):
        for match in _LINK.finditer(line):
            yield number, match.group(1) or match.group(2)
        reference = _REFERENCE.match(line)
        if reference:
            yield number, reference.group(1)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text lowercased, punctuation dropped (letters,
    digits, ``_`` and ``-`` kept), spaces made hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link counts as its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor, repeats numbered as GitHub numbers them (``x``, ``x-1``)."""
    seen: dict[str, int] = {}
    found = set()
    for _, line in _prose(text):
        heading = re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading is None:
            continue
        base = slug(heading.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def test_slugs_follow_github() -> None:
    assert slug("Serving and configuring them") == "serving-and-configuring-them"
    assert (
        slug("HTTP abuse (`tests/e2e/test_abuse_http.py`, raw HTTP, no SDK)")
        == "http-abuse-testse2etest_abuse_httppy-raw-http-no-sdk"
    )
    assert slug("uvloop, and the final figures (2026-11-24)") == (
        "uvloop-and-the-final-figures-2026-11-24"
    )
    assert anchors("# A\n## A\n```\n# not a heading\n```\n## A\n") == {"a", "a-1", "a-2"}


def _broken_links() -> list[str]:
    broken = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for number, target in _links(text):
            if _SCHEME.match(target):
                continue  # http:, https:, mailto: ...
            where = f"{doc.relative_to(ROOT)}:{number}: {target}"
            path_part, _, anchor = target.partition("#")
            file = (doc.parent / unquote(path_part)).resolve() if path_part else doc
            if not file.is_relative_to(ROOT) or not file.exists():
                broken.append(f"{where} (no such file in the repository)")
            elif anchor and file.suffix == ".md":
                if unquote(anchor).lower() not in anchors(file.read_text(encoding="utf-8")):
                    broken.append(f"{where} (no such heading)")
    return broken


def test_every_relative_link_in_the_docs_leads_to_a_file_and_heading_of_the_repository() -> None:
    assert _broken_links() == []


# The architecture tree


def _tree() -> dict[str, int]:
    """The tree in docs/architecture.md: each entry's path below the package, and its level."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("\n```\nmcp_toolbridge/\n", 1)[1].split("\n```", 1)[0]
    entries: dict[str, int] = {}
    parents: list[str] = []
    for line in block.splitlines():
        match = re.match(r"^([│ ]*)[├└]── (\S+)\s+(\d)\s", line)
        assert match is not None, f"not a tree line: {line!r}"
        depth = len(match.group(1)) // 4
        parents[depth:] = [match.group(2)]
        entries["".join(parents)] = int(match.group(3))
    return entries


def _package_entries() -> set[str]:
    """Every top-level module and every package (subpackages included), as the tree names
    them: ``errors.py``, ``policy/``, ``policy/shell/``."""
    found = {p.name for p in PACKAGE.glob("*.py")}
    for init in PACKAGE.rglob("__init__.py"):
        folder = init.parent.relative_to(PACKAGE)
        if folder.parts and "examples" not in folder.parts:
            found.add(f"{folder.as_posix()}/")
    return found


def test_the_architecture_tree_names_every_package_and_top_level_module_at_its_level() -> None:
    tree = _tree()
    assert sorted(tree) == sorted(_package_entries())
    unit_of = {entry: entry.partition("/")[0] + ("/" if "/" in entry else "") for entry in tree}
    assert tree == {entry: LEVELS[unit_of[entry]] for entry in tree}
