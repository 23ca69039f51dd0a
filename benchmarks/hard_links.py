"""Reading files of a package store's links (pnpm's node_modules) with the policy's hard-link
check: one index of the workspace kept between calls (``LinkIndex``, the product) against a
walk of the workspace for each call (the baseline: a fresh index per read, as before).

The workspace holds FILES hard links into a store outside it (every one has two links, so
every read asks for its other names), made SETTLED_NS before the reads as an install made
before the session, and a ``.env`` that asks; the policy is the served read tool's, from the
default policy. Prints the time of READS reads of random linked files, the
walks made, and the ratio, least of REPS.

    PYTHONPATH=. .venv/bin/python benchmarks/hard_links.py [--files 100000] [--reads 50] \
        [--reps 3]
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mcp_toolbridge.builtins.fs.links import SETTLED_NS, LinkIndex
from mcp_toolbridge.builtins.fs.read import SPEC as READ_SPEC
from mcp_toolbridge.builtins.fs.visibility import read_verdict
from mcp_toolbridge.policy import Action, Policy


def _store(root: Path, files: int) -> tuple[Path, list[Path]]:
    store, workspace = root / "store", root / "ws"
    store.mkdir()
    (workspace / "node_modules" / ".pnpm").mkdir(parents=True)
    (workspace / ".env").write_text("TOKEN=x\n", encoding="utf-8")
    linked = []
    per_package = 100
    for i in range(files):
        package = workspace / "node_modules" / ".pnpm" / f"pkg{i // per_package}"
        if i % per_package == 0:
            package.mkdir()
        (store / f"{i}.js").write_bytes(b"module.exports = 1\n")
        os.link(store / f"{i}.js", package / f"{i}.js")
        linked.append(package / f"{i}.js")
    return workspace, linked


def _reads(
    workspace: Path, verdict: Callable[[Path], Action], paths: list[Path], shared: bool
) -> tuple[float, int]:
    started = time.perf_counter()
    walks = 0
    index = LinkIndex(workspace, verdict)
    for path in paths:
        if not shared:
            walks += index.walks
            index = LinkIndex(workspace, verdict)
        assert index.stricter(path, os.stat(path)) is None
    return time.perf_counter() - started, walks + index.walks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--reads", type=int, default=50)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        workspace, linked = _store(Path(folder), args.files)
        time.sleep(SETTLED_NS / 1e9)  # as a store installed before the session: settled
        policy = Policy.load(None, workspace=workspace, user_data=None)
        verdict = read_verdict(policy, READ_SPEC)
        env: Action = verdict(workspace / ".env")
        rng = random.Random(0)
        paths = [rng.choice(linked) for _ in range(args.reads)]
        best: dict[bool, tuple[float, int]] = {}
        for _ in range(args.reps):
            for shared in (False, True):
                took = _reads(workspace, verdict, paths, shared)
                if shared not in best or took[0] < best[shared][0]:
                    best[shared] = took
    print(f"{args.files:,} linked files in the workspace (.env: {env}); {args.reads} reads\n")
    print("| index | s for all reads | ms a read | walks |")
    print("|---|---|---|---|")
    for shared, name in ((False, "a walk per call (before)"), (True, "kept (LinkIndex)")):
        seconds, walks = best[shared]
        print(f"| {name} | {seconds:.3f} | {seconds / args.reads * 1000:.2f} | {walks} |")
    print(f"\nratio kept / per call: {best[True][0] / best[False][0]:.4f}")


if __name__ == "__main__":
    main()
