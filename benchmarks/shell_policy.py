"""What the bash tool's policy check costs a call, and what judging what words can become
(issue 25: a pattern that expands to a planted option) adds to it.

    .venv/bin/python benchmarks/shell_policy.py [--reps 2000]

Each command line of a small corpus (plain commands, pipelines, patterns, safe spellings,
nested shells) is checked the way the gate checks a bash call (``policy.targets`` with the
bash parser, ``shell_targets`` with realpath and glob expansion in a temporary workspace of
200 files, ``decide``, ``shell_floor``), with the parse cache cleared before every check so
the whole line is parsed each time (the server caches it: a call parsed once costs only the
hooks). Rows, timed in this process and alternated:

- baseline: the same check with the word judgement switched off
  (``expansion_reasons`` and ``hidden_option`` replaced by no-ops);
- judged: the check as it runs;
- judgement alone: the two functions on the parsed words, no parse.

Cells: median microseconds per command line over the corpus, with the ratio to the baseline.
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
from mcp_toolbridge.policy.shell.expanded import expansion_reasons, hidden_option
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


def per_line(policy: Policy, reps: int) -> list[float]:
    """Microseconds per check, one median per command line."""
    found = []
    for command in CORPUS:
        times = []
        for _ in range(reps):
            parse_command.cache_clear()
            start = time.perf_counter()
            check(policy, command)
            times.append(time.perf_counter() - start)
        found.append(statistics.median(times) * 1e6)
    return found


def judgement_alone(reps: int) -> list[float]:
    found = []
    for command in CORPUS:
        argv = tuple(command.split())
        start = time.perf_counter()
        for _ in range(reps):
            expansion_reasons(argv, argv, argv, 0)
            hidden_option(argv, argv)
        found.append((time.perf_counter() - start) / reps * 1e6)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        (workspace / "src").mkdir(parents=True)
        for i in range(200):
            (workspace / f"f{i:03}.txt").write_text("x\n", encoding="utf-8")
        (workspace / "policy.toml").write_text(POLICY, encoding="utf-8")
        policy = Policy.load(workspace / "policy.toml", workspace=workspace, user_data=None)
        actions = {command: check(policy, command) for command in CORPUS}
        names = vars(walk)  # the walker's own references to the two functions
        real = {name: names[name] for name in ("expansion_reasons", "hidden_option")}
        off: dict[str, Callable[..., Any]] = {
            "expansion_reasons": lambda *a: [],
            "hidden_option": lambda *a: None,
        }
        rows: dict[str, list[list[float]]] = {"baseline": [], "judged": []}
        for _ in range(3):  # alternate, so drift hits both rows alike
            names.update(off)
            rows["baseline"].append(per_line(policy, args.reps // 3))
            names.update(real)
            rows["judged"].append(per_line(policy, args.reps // 3))
        alone = judgement_alone(args.reps)
    base = [statistics.median(r[k] for r in rows["baseline"]) for k in range(len(CORPUS))]
    judged = [statistics.median(r[k] for r in rows["judged"]) for k in range(len(CORPUS))]
    width = max(len(c) for c in CORPUS)
    print(f"| {'command line':<{width}} | decision | baseline us | judged us | ratio | alone us |")
    print(f"| {'-' * width} | --- | ---: | ---: | ---: | ---: |")
    for k, command in enumerate(CORPUS):
        print(
            f"| {command:<{width}} | {actions[command]} | {base[k]:.1f} | {judged[k]:.1f} | "
            f"{judged[k] / base[k]:.3f} | {alone[k]:.2f} |"
        )
    total_base, total_judged = statistics.median(base), statistics.median(judged)
    print(
        f"| {'median over the corpus':<{width}} |  | {total_base:.1f} | {total_judged:.1f} | "
        f"{total_judged / total_base:.3f} | {statistics.median(alone):.2f} |"
    )


if __name__ == "__main__":
    main()
