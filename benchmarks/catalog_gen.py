"""Generate a synthetic, valid tool catalog of N tools in the three manifest formats.

    .venv/bin/python benchmarks/catalog_gen.py N OUTDIR [--format agentcli|agentpm|runloop|all]
        [--seed 7]

Tools get realistic, varied names (snake_case, camelCase, kebab-case, dotted ids), one- to
two-sentence descriptions and schemas of 1-7 properties (enums, bounds, arrays, nested
objects). Tools are grouped by the system they talk to (github, calendar, invoices, ...), and
each manifest holds one system's tools, so namespaces mean something.

Layout under OUTDIR:
  agentcli/<system>[-n]/tools.json          up to 400 tools each, commands ./tools/bin/NAME
  runloop/<system>[-n]/manifest.toml        bundle pinning tools.json by BLAKE3; up to 250
  runloop/<system>[-n]/tools.json           tools each, exec and http transports
  agentpm/<shard>/<name>/agent.json         one tool per file (AgentPM has no multi-tool file)

With --format all the mix is 45% agentcli, 45% runloop and 10% AgentPM: one file per AgentPM
tool makes that format the most expensive to load, and real catalogs hold few of them.
Output is deterministic for a given N, format and seed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blake3 import blake3

SYSTEMS: dict[str, tuple[str, ...]] = {
    "github": ("issue", "pull request", "repository", "branch", "commit", "release", "label"),
    "gitlab": ("merge request", "pipeline", "project", "runner", "milestone"),
    "jira": ("ticket", "sprint", "epic", "board", "worklog"),
    "calendar": ("event", "meeting", "reminder", "invitation", "availability slot"),
    "mail": ("message", "draft", "thread", "attachment", "mailbox", "filter rule"),
    "slack": ("channel", "message", "reaction", "user group", "bookmark"),
    "drive": ("file", "folder", "shared link", "revision", "permission"),
    "postgres": ("table", "row", "index", "query plan", "backup", "role"),
    "redis": ("key", "stream", "cache entry", "pubsub channel"),
    "aws": ("ec2 instance", "s3 bucket", "lambda function", "iam role", "cloudwatch alarm"),
    "kubernetes": ("pod", "deployment", "service", "config map", "namespace quota"),
    "docker": ("container", "image", "volume", "network"),
    "stripe": ("invoice", "payment", "customer", "subscription", "refund", "payout"),
    "accounting": ("expense", "ledger entry", "budget", "tax rate", "receipt"),
    "crm": ("contact", "lead", "deal", "account", "call note"),
    "weather": ("forecast", "weather alert", "air quality reading", "observation"),
    "maps": ("route", "place", "geocode", "travel time", "elevation profile"),
    "travel": ("flight", "hotel booking", "itinerary", "rental car", "visa requirement"),
    "health": ("appointment", "prescription", "lab result", "patient record"),
    "spotify": ("playlist", "track", "album", "podcast episode"),
    "news": ("headline", "article", "news source", "topic digest"),
    "translate": ("translation", "glossary", "language detection"),
    "nlp": ("summary", "sentiment score", "keyword list", "named entity", "word count"),
    "images": ("image", "thumbnail", "image caption", "color palette"),
    "ci": ("build", "job", "artifact", "test report", "deployment"),
    "monitoring": ("metric", "dashboard", "incident", "log entry", "uptime check"),
    "shop": ("product", "order", "shopping cart", "shipment", "coupon"),
    "hr": ("employee", "leave request", "payslip", "job opening", "candidate"),
    "timeclock": ("time zone", "timestamp", "timer", "world clock"),
    "notes": ("note", "notebook", "checklist", "tag"),
}
VERBS: dict[str, str] = {
    "get": "Get a single {noun} by its identifier from {sys_}.",
    "list": "List {nouns} in {sys_}, newest first, with optional filters and paging.",
    "create": "Create a new {noun} in {sys_} and return its identifier.",
    "update": "Update fields of an existing {noun} in {sys_}; unspecified fields are kept.",
    "delete": "Permanently delete a {noun} from {sys_}. This cannot be undone.",
    "search": "Search {nouns} in {sys_} by free-text query and return the best matches.",
    "export": "Export {nouns} from {sys_} as CSV or JSON for reporting.",
    "import": "Import {nouns} into {sys_} from a CSV or JSON document.",
    "archive": "Archive a {noun} in {sys_} so it no longer shows in default views.",
    "restore": "Restore an archived or deleted {noun} in {sys_}.",
    "count": "Count {nouns} in {sys_} that match the given filters.",
    "summarize": "Summarize recent activity on {nouns} in {sys_} in a few sentences.",
    "validate": "Validate a {noun} against {sys_} rules and report problems.",
    "sync": "Synchronize {nouns} between {sys_} and a local copy.",
    "watch": "Subscribe to changes of a {noun} in {sys_} and report new events.",
    "share": "Share a {noun} from {sys_} with other users or teams.",
    "compare": "Compare two versions of a {noun} in {sys_} and show the differences.",
    "analyze": "Analyze {nouns} in {sys_} and report trends, outliers and totals.",
}
QUALIFIERS = (
    "",
    "recent",
    "shared",
    "archived",
    "team",
    "personal",
    "pending",
    "scheduled",
    "draft",
    "public",
    "private",
    "starred",
    "failed",
    "bulk",
    "default",
    "related",
)
EXTRA_SENTENCES = (
    "Requires read access to the workspace.",
    "Results are paginated; use the cursor to continue.",
    "Times are in UTC unless a time zone is given.",
    "Rate limited to 60 calls per minute.",
    "Returns a compact JSON object suitable for further processing.",
    "",
    "",
)


@dataclass(frozen=True)
class Tool:
    system: str
    verb: str
    qualifier: str
    noun: str
    serial: int

    @property
    def words(self) -> list[str]:
        parts = [self.verb, *self.qualifier.split(), *self.noun.split()]
        return parts + ([f"v{self.serial}"] if self.serial else [])

    def name(self, style: str) -> str:
        w = self.words
        if style == "camel":
            return w[0] + "".join(p.capitalize() for p in w[1:])
        if style == "kebab":
            return "-".join(w)
        return "_".join(w)

    def description(self, rng: random.Random) -> str:
        noun = " ".join(filter(None, (self.qualifier, self.noun)))
        nouns = noun + ("es" if noun.endswith(("s", "x", "ch")) else "s")
        first = VERBS[self.verb].format(noun=noun, nouns=nouns, sys_=self.system.capitalize())
        return " ".join(filter(None, (first, rng.choice(EXTRA_SENTENCES))))


def tools(n: int, rng: random.Random) -> Iterator[Tool]:
    """``n`` distinct tools, systems interleaved so any prefix covers many systems."""
    combos = [
        (sys_, verb, qual, noun)
        for sys_, nouns in SYSTEMS.items()
        for noun in nouns
        for verb in VERBS
        for qual in QUALIFIERS
    ]
    rng.shuffle(combos)
    for serial in itertools.count():
        for sys_, verb, qual, noun in combos:
            if n <= 0:
                return
            n -= 1
            yield Tool(sys_, verb, qual, noun, serial)


def prop(tool: Tool, rng: random.Random, kind: int) -> tuple[str, dict[str, Any]]:
    key = tool.noun.replace(" ", "_")
    options: list[tuple[str, dict[str, Any]]] = [
        (f"{key}_id", {"type": "string", "description": f"Identifier of the {tool.noun}"}),
        ("query", {"type": "string", "description": f"Free-text search over {tool.noun} fields"}),
        (
            "limit",
            {
                "type": "integer",
                "minimum": 1,
                "maximum": 100,
                "default": 20,
                "description": "Maximum number of results",
            },
        ),
        (
            "since",
            {
                "type": "string",
                "format": "date-time",
                "description": "Only items changed after this time (ISO 8601)",
            },
        ),
        (
            "status",
            {
                "type": "string",
                "enum": ["open", "closed", "pending", "archived"],
                "description": f"Filter by {tool.noun} status",
            },
        ),
        (
            "fields",
            {
                "type": "array",
                "items": {"type": "string"},
                "maxItems": 20,
                "description": "Fields to include in the result",
            },
        ),
        (
            "options",
            {
                "type": "object",
                "properties": {
                    "include_archived": {
                        "type": "boolean",
                        "description": "Also return archived items",
                    },
                    "sort": {"type": "string", "enum": ["newest", "oldest", "relevance"]},
                },
                "additionalProperties": False,
            },
        ),
        (
            "dry_run",
            {
                "type": "boolean",
                "default": False,
                "description": "Report what would change without changing anything",
            },
        ),
        ("time_zone", {"type": "string", "description": "IANA time zone, e.g. Europe/Helsinki"}),
        ("owner", {"type": "string", "description": "User name or email of the owner"}),
        ("amount", {"type": "number", "minimum": 0, "description": "Amount in the currency"}),
        (
            "format",
            {"type": "string", "enum": ["json", "csv", "markdown"], "description": "Output format"},
        ),
    ]
    return options[kind % len(options)]


def input_schema(tool: Tool, rng: random.Random) -> dict[str, Any]:
    kinds = [0, *rng.sample(range(1, 12), rng.randint(0, 6))]
    props = dict(prop(tool, rng, k) for k in kinds)
    return {
        "type": "object",
        "properties": props,
        "required": [next(iter(props))],
        "additionalProperties": False,
    }


RESULT = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "data": {}},
    "required": ["ok"],
}


class Names:
    """Keeps MCP names (sanitized, case-folded) unique across the whole catalog."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def claim(self, wanted: str, system: str, sep: str = "_") -> str:
        for candidate in itertools.chain(
            (wanted, f"{system}{sep}{wanted}"), (f"{wanted}{sep}{i}" for i in itertools.count(2))
        ):
            key = re.sub(r"[^a-z0-9_-]+", "_", candidate.lower())
            if key not in self.used:
                self.used.add(key)
                return candidate
        raise AssertionError("unreachable")


def dump(path: Path, doc: object) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(doc, indent=1) + "\n").encode("utf-8")
    path.write_bytes(data)
    return data


def packs(items: list[Tool], size: int) -> Iterator[tuple[str, list[Tool]]]:
    """Per-system chunks of at most ``size`` tools, folder-named after the system."""
    by_system: dict[str, list[Tool]] = {}
    for t in items:
        by_system.setdefault(t.system, []).append(t)
    for system, group in sorted(by_system.items()):
        for i in range(0, len(group), size):
            yield (system if i == 0 else f"{system}-{i // size + 1}"), group[i : i + size]


def write_agentcli(items: list[Tool], out: Path, rng: random.Random, names: Names) -> None:
    for folder, group in packs(items, 400):
        entries = []
        for t in group:
            name = names.claim(t.name(rng.choice(("snake", "snake", "camel"))), t.system)
            entry: dict[str, Any] = {
                "name": name,
                "description": t.description(rng),
                "schema": input_schema(t, rng),
                "command": [f"./tools/bin/{name}"],
                "timeoutSec": rng.choice((5, 10, 30)),
            }
            if rng.random() < 0.2:
                entry["envPassthrough"] = [f"{t.system.upper()}_TOKEN"]
            entries.append(entry)
        dump(out / "agentcli" / folder / "tools.json", {"tools": entries})


def write_runloop(items: list[Tool], out: Path, rng: random.Random, names: Names) -> None:
    for folder, group in packs(items, 250):
        entries = []
        for t in group:
            transport: dict[str, Any] = (
                {
                    "kind": "http",
                    "method": "POST",
                    "url": f"https://api.{t.system}.example/v1/{t.name('snake')}",
                }
                if rng.random() < 0.5
                else {"kind": "exec", "command": f"/opt/{t.system}/bin/{t.name('kebab')}"}
            )
            tool_id = names.claim(f"{t.system}.{t.name('snake')}", t.system)
            entries.append(
                {
                    "id": tool_id,
                    "description": t.description(rng),
                    "transport": transport,
                    "input_schema": input_schema(t, rng),
                    "result_schema": RESULT,
                    "observability": {"tags": [t.system, t.verb]},
                }
            )
        data = dump(out / "runloop" / folder / "tools.json", {"version": 1, "tools": entries})
        toml = (
            f'[agent]\nname = "{folder}"\nversion = "0.1.0"\nkind = "wasm32-wasip1"\n\n'
            f'[artifacts.tools]\npath = "tools.json"\nblake3 = "{blake3(data).hexdigest()}"\n'
            "version = 1\n"
        )
        (out / "runloop" / folder / "manifest.toml").write_text(toml, encoding="utf-8")


def write_agentpm(items: list[Tool], out: Path, rng: random.Random, names: Names) -> None:
    for i, t in enumerate(items):
        name = names.claim(f"{t.system}-{t.name('kebab')}"[:60], t.system, "-")
        doc = {
            "kind": "tool",
            "name": name,
            "version": "1.0.0",
            "description": t.description(rng),
            "files": ["main.py"],
            "entrypoint": {"command": "python3", "args": ["main.py"], "timeout_ms": 30000},
            "runtime": {"type": "python", "version": "3.11"},
            "inputs": input_schema(t, rng),
            "outputs": RESULT,
        }
        dump(out / "agentpm" / f"shard-{i // 1000:03d}" / name / "agent.json", doc)


def generate(n: int, out: Path, fmt: str = "all", seed: int = 7) -> dict[str, int]:
    """Write ``n`` tools under ``out``; returns how many tools each format got."""
    rng = random.Random(seed)
    items = list(tools(n, rng))
    if fmt == "all":
        a, b = int(n * 0.45), int(n * 0.9)
        split = {"agentcli": items[:a], "runloop": items[a:b], "agentpm": items[b:]}
    else:
        split = {fmt: items}
    writers = {"agentcli": write_agentcli, "runloop": write_runloop, "agentpm": write_agentpm}
    names = Names()
    for name, chunk in split.items():
        writers[name](chunk, out, rng, names)
    return {name: len(chunk) for name, chunk in split.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int)
    parser.add_argument("outdir", type=Path)
    parser.add_argument(
        "--format", default="all", choices=("agentcli", "agentpm", "runloop", "all")
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    counts = generate(args.n, args.outdir, args.format, args.seed)
    print(f"wrote {args.n} tools to {args.outdir}: {counts}")


if __name__ == "__main__":
    main()
