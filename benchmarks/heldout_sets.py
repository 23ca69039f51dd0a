"""Build the extra held-out search sets (``benchmarks/heldout/``) from upstream snapshots.

    .venv/bin/python benchmarks/heldout_sets.py --tau-bench GITDIR --sgd GITDIR [--out DIR]

Each ``GITDIR`` is a git directory (a bare clone or a checkout's ``.git``) of the upstream
repository; files are read at its ``HEAD`` with ``git show``, so nothing is executed: the
tau-bench tasks and tool schemas are Python source, read with ``ast`` only. The output has the
format of ``../shared/toolsearch-bench`` (``tools.jsonl``, ``queries-dev.jsonl``), with one
addition: a query may carry ``equivalent`` (gold id -> other ids that serve it as well), which
``benchmarks/search_protocol.py`` counts as the same gold tool. These sets are for validation
only: nothing in the product is chosen on them.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "heldout"
SGD_QUERIES = 2000
"""At most this many SGD queries, spread evenly over the dialogues in file order."""


def git_show(repo: Path, path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(repo), "show", f"HEAD:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def git_files(repo: Path, under: str) -> list[str]:
    out = subprocess.run(
        ["git", "--git-dir", str(repo), "ls-tree", "-r", "--name-only", "HEAD", under],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return out.split()


def git_head(repo: Path) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(repo), "rev-parse", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def write_set(out: Path, tools: list[dict[str, Any]], queries: list[dict[str, Any]]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("tools.jsonl", tools), ("queries-dev.jsonl", queries)):
        with (out / name).open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")


# -- tau-bench ------------------------------------------------------------------------------


def tau_tool(source: str) -> dict[str, Any]:
    """The OpenAI function schema a tau-bench tool's ``get_info`` returns (a literal)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == "get_info":
            for stmt in ast.walk(node):
                if isinstance(stmt, ast.Return) and stmt.value is not None:
                    info: dict[str, Any] = ast.literal_eval(stmt.value)
                    return dict(info["function"])
    raise ValueError("no get_info literal")


def tau_tasks(source: str) -> list[tuple[str, list[str]]]:
    """(instruction, action names in order) of every ``Task(...)`` in a tasks file that a
    person annotated (the ``synthetic`` ones list only their final write actions)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Task"):
            continue
        fields = {kw.arg: kw.value for kw in node.keywords}
        if "annotator" in fields and ast.literal_eval(fields["annotator"]) == "synthetic":
            continue
        instruction = ast.literal_eval(fields["instruction"])
        actions = []
        for call in getattr(fields.get("actions"), "elts", []):
            for kw in call.keywords:
                if kw.arg == "name":
                    actions.append(ast.literal_eval(kw.value))
        out.append((str(instruction), actions))
    return out


def build_tau(repo: Path, out: Path) -> None:
    tools, queries = [], []
    seen: set[str] = set()
    task_files = {
        "retail": ["tasks_test.py", "tasks_dev.py", "tasks_train.py"],
        "airline": ["tasks_test.py"],
    }
    for domain, files in task_files.items():
        base = f"tau_bench/envs/{domain}"
        for path in git_files(repo, f"{base}/tools/"):
            if path.endswith("__init__.py"):
                continue
            fn = tau_tool(git_show(repo, path))
            tools.append(
                {
                    "id": f"{domain}.{fn['name']}",
                    "name": fn["name"],
                    "description": fn.get("description", ""),
                    "parameters": fn.get("parameters") or {"type": "object"},
                    "namespace": domain,
                }
            )
        for file in files:
            for n, (instruction, actions) in enumerate(tau_tasks(git_show(repo, f"{base}/{file}"))):
                if instruction in seen or not actions:
                    continue
                seen.add(instruction)
                relevant = list(dict.fromkeys(f"{domain}.{a}" for a in actions))
                queries.append(
                    {
                        "id": f"{domain}-{file.removesuffix('.py')}-{n}",
                        "query": instruction,
                        "relevant": relevant,
                        "split": "dev",
                        "subset": domain,
                    }
                )
    write_set(out, tools, queries)


# -- Schema-Guided Dialogue -----------------------------------------------------------------


def build_sgd(repo: Path, out: Path) -> None:
    services: dict[str, dict[str, Any]] = {}
    for split in ("train", "dev", "test"):
        for service in json.loads(git_show(repo, f"{split}/schema.json")):
            services.setdefault(service["service_name"], service)
    tools = []
    by_domain_intent: dict[tuple[str, str], list[str]] = defaultdict(list)
    for name, service in sorted(services.items()):
        slots = {slot["name"]: slot for slot in service["slots"]}
        domain = name.split("_")[0]
        for intent in service["intents"]:
            props: dict[str, Any] = {}
            for slot_name in [*intent["required_slots"], *intent["optional_slots"]]:
                slot = slots[slot_name]
                prop: dict[str, Any] = {"type": "string", "description": slot["description"]}
                if slot["is_categorical"] and slot["possible_values"]:
                    prop["enum"] = slot["possible_values"]
                props[slot_name] = prop
            tool_id = f"{name}.{intent['name']}"
            tools.append(
                {
                    "id": tool_id,
                    "name": intent["name"],
                    "description": intent["description"],
                    "parameters": {
                        "type": "object",
                        "properties": props,
                        "required": intent["required_slots"],
                    },
                    "namespace": name,
                    "service_description": service["description"],
                }
            )
            by_domain_intent[(domain, intent["name"])].append(tool_id)

    found = []
    for split in ("test", "dev"):
        for path in git_files(repo, f"{split}/"):
            if not path.rsplit("/", 1)[-1].startswith("dialogues_"):
                continue
            try:
                dialogues = json.loads(git_show(repo, path))
            except subprocess.CalledProcessError:  # a snapshot may lack its largest files
                print("skipped (absent from the snapshot):", path)
                continue
            for dialogue in dialogues:
                active: dict[str, str] = {}
                for turn in dialogue["turns"]:
                    if turn["speaker"] != "USER":
                        continue
                    new = []
                    for frame in turn["frames"]:
                        intent = frame["state"]["active_intent"]
                        if intent != "NONE" and active.get(frame["service"]) != intent:
                            new.append(f"{frame['service']}.{intent}")
                        active[frame["service"]] = intent
                    if new:
                        found.append((dialogue["dialogue_id"], turn["utterance"], new))
    step = max(1, len(found) // SGD_QUERIES)
    queries: list[dict[str, Any]] = []
    for dialogue_id, utterance, relevant in found[::step][:SGD_QUERIES]:
        equivalent = {}
        for gold in relevant:
            service, intent = gold.split(".")
            others = [t for t in by_domain_intent[(service.split("_")[0], intent)] if t != gold]
            if others:
                equivalent[gold] = others
        row: dict[str, Any] = {
            "id": f"{dialogue_id}-{len(queries)}",
            "query": utterance,
            "relevant": relevant,
            "split": "dev",
        }
        if equivalent:
            row["equivalent"] = equivalent
        queries.append(row)
    write_set(out, tools, queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tau-bench", type=Path, help="git dir of sierra-research/tau-bench")
    parser.add_argument("--sgd", type=Path, help="git dir of dstc8-schema-guided-dialogue")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if args.tau_bench:
        build_tau(args.tau_bench, args.out / "tau-bench")
        print("tau-bench at", git_head(args.tau_bench))
    if args.sgd:
        build_sgd(args.sgd, args.out / "sgd")
        print("sgd at", git_head(args.sgd))


if __name__ == "__main__":
    main()
