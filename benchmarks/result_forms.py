"""What a locked tool's result costs a model in each form: the JSON of the structured result
(the text content before, and what clients that show structuredContent pass on) against the
readable text the tools now write.

    .venv/bin/python benchmarks/result_forms.py [--root DIR]

Calls run in this process through ``Bridge.call`` over ``--root`` (default: this repository)
as the workspace, with a policy that allows them:

- read: a ~300-line Python source of this repository (``mcp_toolbridge/executors/exec_tool.py``);
- grep over the package: ``async def`` in content mode, and ``anyio`` in files_with_matches mode;
- glob: ``**/*.py``;
- bash: ``git log --stat -5`` (skipped outside a git work tree).

Forms: ``json`` is ``json.dumps(value)`` (the text content before; Python's separators),
``compact`` is the same without spaces (``JSON.stringify``, what Claude Code shows of a
successful result with structuredContent), ``text`` is the result's text content now.

No tokenizer is used (tiktoken installs, but fetches its encodings from the network at first
use, which a machine without that access cannot), so the figures are proxies: characters, characters
/ 4, whitespace-separated words, and pre-tokenizer pieces (runs of letters or digits, runs of
other symbols, runs of whitespace, and each JSON escape such as ``\\n`` or ``\\"`` on its own:
roughly the first split a BPE tokenizer makes, so a lower bound on its token count).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import anyio

from mcp_toolbridge.runtime import Settings, load_catalog, open_bridge

ROOT = Path(__file__).resolve().parent.parent
POLICY = """
default_action = "allow"
[requires]
fs.read = ["{workspace}"]
"""
_PIECES = re.compile(r"\\(?:u[0-9a-fA-F]{4}|.)|[^\W_]+|[^\w\s\\]+|_+|\s+")
"""A JSON escape (``\\n``, ``\\"``, ``\\u00e9``), a run of letters or digits, of other
symbols, of underscores, of whitespace."""


def measure(text: str) -> dict[str, int]:
    return {
        "chars": len(text),
        "chars/4": round(len(text) / 4),
        "words": len(text.split()),
        "pieces": len(_PIECES.findall(text)),
    }


def calls(root: Path) -> list[tuple[str, str, dict[str, Any]]]:
    found = [
        ("read", "300-line Python file", {"file_path": "mcp_toolbridge/executors/exec_tool.py"}),
        (
            "grep",
            "content, repo",
            {"pattern": "async def", "path": "mcp_toolbridge", "output_mode": "content"},
        ),
        ("grep", "files, repo", {"pattern": "anyio", "path": "mcp_toolbridge"}),
        ("glob", "**/*.py", {"pattern": "**/*.py", "path": "mcp_toolbridge"}),
    ]
    inside = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"],
        capture_output=True,
        check=False,
    )
    if inside.returncode == 0:
        found.append(("bash", "git log --stat -5", {"command": "git log --stat -5"}))
    return found


async def run(root: Path) -> list[tuple[str, str, dict[str, dict[str, int]]]]:
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        policy = Path(scratch) / "policy.toml"
        policy.write_text(POLICY, encoding="utf-8")
        settings = Settings(paths=[], workspace=root, policy_file=policy, audit=False)
        loaded = load_catalog(settings, locked=True)
        async with open_bridge(settings, loaded) as bridge:
            for tool, label, arguments in calls(root):
                outcome = await bridge.call(tool, arguments)
                if not outcome.ok or outcome.text is None:
                    raise SystemExit(f"{tool} {arguments} failed: {outcome.error}")
                forms = {
                    "json": json.dumps(outcome.value, ensure_ascii=False),
                    "compact": json.dumps(outcome.value, ensure_ascii=False, separators=(",", ":")),
                    "text": outcome.text,
                }
                rows.append((tool, label, {name: measure(t) for name, t in forms.items()}))
    return rows


def table(rows: list[tuple[str, str, dict[str, dict[str, int]]]]) -> str:
    out = [
        "| call | form | chars | chars/4 | words | pieces | pieces vs text |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for tool, label, forms in rows:
        base = forms["text"]["pieces"]
        for name in ("json", "compact", "text"):
            m = forms[name]
            ratio = f"{m['pieces'] / base:.2f}x" if base else "-"
            out.append(
                f"| {tool} ({label}) | {name} | {m['chars']:,} | {m['chars/4']:,} | "
                f"{m['words']:,} | {m['pieces']:,} | {ratio} |"
            )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the workspace (default: repo)")
    args = parser.parse_args()
    print(table(anyio.run(run, args.root.resolve())))


if __name__ == "__main__":
    main()
