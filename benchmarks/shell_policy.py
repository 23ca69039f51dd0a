"""What the bash tool's policy check costs a call, and what judging what words can become
(issue 25: a pattern that expands to a planted option) adds to it.

    .venv/bin/python benchmarks/shell_policy.py [--reps 300]

Each command line of a small corpus (plain commands, pipelines, patterns, safe spellings,
nested shells) is checked the way the gate checks a bash call (``policy.targets`` with the
bash parser, ``shell_targets`` with realpath and glob expansion in a temporary workspace of
50 files, ``decide``, ``shell_floor``), with the parse cache cleared before every check so
the whole line is parsed each time (the server caches it: a call parsed once costs only the
hooks). Each line is measured twice, rep by rep alternated in this process: with the word
judgement switched off (``expansion_reasons`` and ``hidden_option`` replaced by no-ops in the
walker: the baseline, the check as it was before issue 25) and as it runs. Columns: the parse
alone (``parse_command``, where the judgement runs) and the whole check, each as the median
microseconds over the repetitions, with the ratio judged / baseline; the last row is the
median over the corpus.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_toolbridge.builtins.bash import SPEC as BASH
from mcp_toolbridge.policy import Policy
from mcp_toolbridge.policy.shell import walk
from mcp_toolbridge.policy.shell.hooks import shell_floor, shell_targets
from mcp_toolbridge.policy.shell.parse import parse_command, splitter

CORPUS = [
    "git status",
    "ls -la",
    "find . -name '*.py' -newer setup.cfg",
    "grep -rn 'def main' src tests",
    "cat a.txt b.txt | sort | uniq -c | head -n 20",
    "find *",
    "tar cf out.tar *",
    "tar cf out.tar -- *",
    "rm -f -- *.o",
    "git add -- *.py && git commit -m 'a message' && git log --oneline -n 5",
    "cd src && sed -n 1,20p -- *.txt > ../out.txt",
    "bash -c 'for f in ./*.txt; do wc -l \"$f\"; done'",
    "find . -type f -print0 | xargs -0 grep -l TODO --",
]
FILES = 50
"""Files in the temporary workspace (what `*` expands to)."""
POLICY = """
extends = "none"
default_action = "ask"
allow = ["bash=git *", "bash=find *", "bash=tar *", "bash=rm *", "bash=ls *", "bash=cat *"]
[requires]
capabilities = ["shell.run"]
fs.read = ["{workspace}"]
fs.write = ["{workspace}"]
"""


def check(policy: Policy, command: str) -> str:
    arguments = {"command": command}
    targets = policy.targets(BASH, arguments, roles=BASH.argument_roles, splitter=splitter)
    targets = shell_targets(policy, BASH, arguments, targets)
    decision = policy.decide(BASH, targets)
    return shell_floor(policy, BASH, arguments, decision, None).action


def measure(policy: Policy, command: str, switch: Callable[[bool], None], reps: int) -> Row:
    """Median microseconds of an uncached parse and of a whole check of ``command``, with
    the judgement off and on, alternated rep by rep so the machine's drift hits both."""
    times: dict[tuple[str, bool], list[float]] = {}
    for _ in range(reps):
        for judged in (False, True):
            switch(judged)
            for what, run in (("parse", parse_command), ("check", lambda c: check(policy, c))):
                parse_command.cache_clear()
                start = time.perf_counter()
                run(command)
                times.setdefault((what, judged), []).append(time.perf_counter() - start)
    switch(True)
    return {key: statistics.median(values) * 1e6 for key, values in times.items()}


Row = dict[tuple[str, bool], float]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=300)
    args = parser.parse_args()
    names = vars(walk)  # the walker's own references to the two functions
    real = {name: names[name] for name in ("expansion_reasons", "hidden_option")}
    off: dict[str, Callable[..., Any]] = {
        "expansion_reasons": lambda *a: [],
        "hidden_option": lambda *a: None,
    }

    def switch(judged: bool) -> None:
        names.update(real if judged else off)

    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        (workspace / "src").mkdir(parents=True)
        for i in range(FILES):
            (workspace / f"f{i:03}.txt").write_text("x\n", encoding="utf-8")
        (workspace / "policy.toml").write_text(POLICY, encoding="utf-8")
        policy = Policy.load(workspace / "policy.toml", workspace=workspace, user_data=None)
        actions = {command: check(policy, command) for command in CORPUS}
        rows = {command: measure(policy, command, switch, args.reps) for command in CORPUS}
    width = max(len(c) for c in CORPUS)
    print(
        f"| {'command line':<{width}} | decision | parse us | parse judged us | ratio "
        "| check us | check judged us | ratio |"
    )
    print(f"| {'-' * width} | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for command in CORPUS:
        row = rows[command]
        print(f"| {command:<{width}} | {actions[command]} | " + _cells(row) + " |")
    medians = {key: statistics.median(rows[c][key] for c in CORPUS) for key in rows[CORPUS[0]]}
    print(f"| {'median over the corpus':<{width}} |  | " + _cells(medians) + " |")


def _cells(row: Row) -> str:
    cells = []
    for what in ("parse", "check"):
        base, judged = row[(what, False)], row[(what, True)]
        cells += [f"{base:.1f}", f"{judged:.1f}", f"{judged / base:.3f}"]
    return " | ".join(cells)


if __name__ == "__main__":
    main()
