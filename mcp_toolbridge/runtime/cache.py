"""The catalog a start composes from the manifests, the locked tools and the policy; and the
same, kept between runs so that a start over an unchanged catalog reads no tool record.

Composing checks every tool against the policy (exposed, left out with a reason, or a load
error), adds the proxy (call_tool) over the manifest tools served, marks the pinned tools, and
builds the catalog (unique names). Over 100,000 tools that is seconds of work on records
unpickled from the manifest cache, so its outcome is cached too: which tools are served under
which names, which are pinned, which are left out and why, and every problem found. The outcome
is keyed on all it is a function of:

- the manifests: each file's fingerprint (its bytes, every file it read, the environment it
  read; see ``loaders.cache``);
- the policy, compiled (``Policy.fingerprint``: its files, variables, rules and scope, with
  paths as canonicalized on this run), and every distinct requirement set the tools declare,
  compiled again on this run and compared (path patterns resolve through the file system);
- the locked tools served (their specs), ``--keep-names`` and the pins;
- this package's version and source (in every cache file's header).

A restored catalog fetches a tool's record (unpickling its manifest's tools) the first time
something reads it: a search hit, a call, a listing of all tools.
"""

from __future__ import annotations

import os
import pickle
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from mcp_toolbridge.builtins import LOCKED_IDS, PROXY_TOOL, TOOL_SEARCH_SPEC, proxy_spec
from mcp_toolbridge.cache import CacheFolder, expand
from mcp_toolbridge.catalog import Catalog, CatalogEntry, Pin, named_as_written, pin_tools
from mcp_toolbridge.errors import ErrorCode, Problem, Severity
from mcp_toolbridge.forking import write_behind
from mcp_toolbridge.loaders import FileLoad, Manifests
from mcp_toolbridge.model import HttpTransport, RequirementSet, ToolSpec
from mcp_toolbridge.policy import Policy, Targets, host_of
from mcp_toolbridge.progress import Meter, stderr_line
from mcp_toolbridge.runtime.snapshot import (
    KIND,
    LeftOut,
    Ref,
    Snapshot,
    catalog_key,
    hidden_spec,
    served_spec,
    snapshot_name,
    snapshot_of,
)

if TYPE_CHECKING:
    from mcp_toolbridge.catalog import DeferredIndex, SearchIndex

__all__ = [
    "DEFER_FROM",
    "HOST_NOT_GRANTED",
    "INDEX_AFTER_LIST_BELOW",
    "REFUSED_WHATEVER",
    "WRITE_BEHIND_FROM",
    "Composed",
    "LeftOut",
    "Meter",
    "Skipped",
    "cache_folder",
    "compose",
    "index_for",
    "meter",
    "serving_index_for",
    "summary",
    "write",
]

WRITE_BEHIND_FROM = 4_000
"""Catalogs from this many tools write their cache in a forked child (pickling costs
≈ 20 µs a tool); smaller ones write it in process."""
DEFER_FROM = 1_000
"""A cached index of this many tools is read back in a background thread when serving."""
INDEX_AFTER_LIST_BELOW = 1_000
"""A stdio server that opens its runtime after its first tools/list makes the search index of
fewer tools than this there too, in the worker thread that imports the call machinery (3 ms
for the bundled catalog, about 0.04 s at 1,000 tools), so that its start imports none of the
search modules before the first answer (about 0.01 s of CPU); a bigger one is made before
serving, on two cores, or read back (``DEFER_FROM``)."""

MeterOf = Callable[[str, int, str], Meter | None]
EXAMPLES = 3
"""Tools named per reason in :attr:`Composed.left_out`."""

HOST_NOT_GRANTED = (
    "its host is not in the granted net.hosts; grant it in the policy's [requires] net.hosts, "
    'or declare it in the tool\'s capabilities ("net:HOST" in its Runloop entry)'
)
REFUSED_WHATEVER = (
    "the policy refuses it whatever its arguments, or does not grant what it requires"
)


@dataclass(frozen=True)
class Skipped:
    """A tool left out of the catalog because of the policy, and why."""

    name: str
    reason: str
    """Why, in words shared by every tool left out for the same reason."""
    detail: str
    """What is this tool's own (the host it calls), or nothing."""
    fetch: Callable[[], ToolSpec] = field(repr=False, compare=False)
    """Gives its spec (read from the cache when it is asked for)."""

    @property
    def spec(self) -> ToolSpec:
        return self.fetch()

    @classmethod
    def of(cls, policy: Policy, spec: ToolSpec) -> Skipped:
        fetch = partial(_same, spec)
        if isinstance(spec.transport, HttpTransport):
            try:
                host = host_of(spec.transport.url)
            except ValueError:
                host = ""
            if host and "{" not in host and policy.check_capabilities(spec, Targets(hosts=(host,))):
                return cls(spec.name, HOST_NOT_GRANTED, host, fetch)
        return cls(spec.name, REFUSED_WHATEVER, "", fetch)

    def notice(self) -> Problem:
        spec = self.spec
        detail = f" ({self.detail})" if self.detail else ""
        return Problem(
            spec.source.path,
            f'tool "{spec.name}" is not served{detail}: {self.reason}',
            spec.source.locator(spec.id),
            ErrorCode.PERMISSION_DENIED,
            Severity.NOTICE,
        )


def _same(spec: ToolSpec) -> ToolSpec:
    return spec


@dataclass(frozen=True)
class Composed:
    """What a start serves: the catalog, what was left out, every problem found."""

    catalog: Catalog
    errors: list[Problem]
    """The problems that are errors, in order."""
    problems: Callable[[], list[Problem]]
    """Gives every problem, notices included (a big catalog can have tens of thousands of
    notices, which a start only prints when it has errors)."""
    skipped: Callable[[], tuple[Skipped, ...]]
    """Gives the tools the policy leaves out (read on demand)."""
    left_out: tuple[LeftOut, ...]
    """What was left out, per reason (what a start reports)."""
    unmatched_pins: tuple[Problem, ...]
    served_sources: dict[str, int]
    """How many manifest tools each source file (as tools name it) has in the catalog."""
    key: bytes | None
    """Identifies this catalog's content (the key of its search index in the cache); None
    when it cannot be cached."""
    restored: bool
    """Whether it came from the cache."""
    programs: tuple[str, ...] = ()
    """The absolute paths the manifest tools' commands name (what they run): kept
    read-only in every sandbox that could write them (sandbox/guard.py)."""


def compose(
    manifests: Manifests,
    builtins: Sequence[ToolSpec],
    policy: Policy,
    *,
    keep_names: bool,
    pins: Sequence[Pin] = (),
    cache: CacheFolder | None,
    meter: MeterOf | None = None,
) -> tuple[Composed, Callable[[], None] | None]:
    """The catalog, restored from ``cache`` when it holds it for exactly these inputs, else
    composed; and the work that brings the cache up to date (None: nothing to write), for
    the caller to run now or in a forked writer."""
    key = catalog_key(manifests, policy, builtins, keep_names, pins) if cache is not None else None
    if cache is not None and key is not None:
        stored = cache.read(snapshot_name(key), KIND)
        if isinstance(stored, Snapshot) and all(
            policy.requirements_fingerprint(req) == fp for req, fp in stored.requirements
        ):
            composed = _restore(stored, manifests, key, keep_names)
            return composed, (partial(manifests.store, cache) if manifests.dirty else None)
    composed, snapshot = _compose(manifests, builtins, policy, keep_names, pins, key, meter)
    if cache is None:
        return composed, None

    def store() -> None:
        manifests.store(cache)
        if key is not None and snapshot is not None:
            name = snapshot_name(key)
            cache.write(name, KIND, snapshot)
            cache.prune("served-", keep=[name], most=8)

    return composed, store


def _restore(stored: Snapshot, manifests: Manifests, key: bytes, keep_names: bool) -> Composed:
    locked = [CatalogEntry(spec) for spec in stored.locked]
    names: list[str] = expand(stored.names)
    pending = dict(zip(names, range(len(names)), strict=True))
    pinned = [names[at] for at in sorted(stored.pinned)]
    fetch = partial(served_spec, manifests, stored, keep_names)
    catalog = Catalog.deferred(locked, pending, fetch, partial(expand, stored.ids), pinned)
    return Composed(
        catalog,
        list(stored.errors),
        partial(pickle.loads, stored.problems),
        partial(_skipped, manifests, stored, keep_names),
        stored.left_out,
        stored.unmatched_pins,
        stored.served_sources,
        key,
        restored=True,
        programs=stored.programs,
    )


def _programs(specs: Iterable[ToolSpec]) -> tuple[str, ...]:
    """The paths in the exec tools' fixed argv (the program, a script): the absolute ones,
    and the others (not options, nor a program named without a path: that is looked up on
    ``PATH``) joined to the folder the tool runs in, as executors/
    exec_tool.py does (``python3 scripts/x.py`` from a served tools.json's folder runs
    ``<folder>/scripts/x.py``; found by the red-team pass of 2026-11-29, 7th). The sandbox
    guard keeps those that are files (sandbox/guard.py)."""
    found: set[str] = set()
    for spec in specs:
        if spec.transport.kind != "exec":
            continue
        cwd = spec.transport.cwd or os.path.dirname(os.path.abspath(spec.source.path))
        for i, arg in enumerate(spec.transport.argv):
            if arg.startswith("/"):
                found.add(arg)
            elif arg and not arg.startswith("-") and (i or "/" in arg):  # git: on PATH
                found.add(os.path.normpath(os.path.join(os.path.abspath(cwd), arg)))
    return tuple(sorted(found))


def _skipped(manifests: Manifests, stored: Snapshot, keep_names: bool) -> tuple[Skipped, ...]:
    names: list[str] = expand(stored.skipped)
    out = []
    for name, item, pos, (reason, detail) in zip(
        names, stored.skipped_refs[0], stored.skipped_refs[1], stored.skipped_why, strict=True
    ):
        spec = partial(hidden_spec, manifests, (item, pos), keep_names)
        out.append(Skipped(name, reason, detail, spec))
    return tuple(out)


def _compose(
    manifests: Manifests,
    builtins: Sequence[ToolSpec],
    policy: Policy,
    keep_names: bool,
    pins: Sequence[Pin],
    key: bytes | None,
    meter: MeterOf | None,
) -> tuple[Composed, Snapshot | None]:
    """Check every tool against the policy, add the proxy, mark the pins, then build the
    catalog (and its snapshot: None when it cannot be restored as it was built)."""
    problems: list[Problem] = list(manifests.problems)
    refs: list[Ref | None] = [None] * len(builtins)
    tools: list[ToolSpec] = []
    for item_no, item in enumerate(manifests.items):
        found = item.tools() if isinstance(item, FileLoad) else item.tools
        refs += [(item_no, pos) for pos in range(len(found))]
        tools += found
    if keep_names:
        tools = [named_as_written(s) for s in tools]
    every = [*builtins, *tools]
    progress = meter("checking tools against the policy", len(every), "tools") if meter else None
    exposed: list[ToolSpec] = []
    where: dict[int, Ref | None] = {}
    skipped: list[tuple[Skipped, Ref | None]] = []
    declared: dict[int, RequirementSet] = {}  # by identity: loaders share these objects
    for n, (spec, ref) in enumerate(zip(every, refs, strict=True)):
        declared[id(spec.requires)] = spec.requires
        found_problems = policy.requirement_problems(spec)
        if found_problems:
            problems.extend(found_problems)
        elif policy.exposed(spec):
            exposed.append(spec)
            where[id(spec)] = ref
        else:
            left = Skipped.of(policy, spec)
            skipped.append((left, ref))
            problems.append(left.notice())
        if progress is not None and n % 1024 == 0 and progress.due():
            progress.update(n)
    problems.extend(policy.name_problems(every, (*LOCKED_IDS, PROXY_TOOL)))
    problems.extend(policy.unmatchable_rules(every))
    proxied = _with_proxy(policy, exposed)
    pinned_specs, pin_problems = pin_tools(proxied, pins)
    for before, after in zip(proxied, pinned_specs, strict=True):  # a pin makes a copy
        where[id(after)] = where.get(id(before))
    problems.extend(pin_problems)
    catalog, catalog_problems = Catalog.build(pinned_specs, keep_names=keep_names)
    problems += catalog_problems
    errors = [p for p in problems if p.severity is Severity.ERROR]
    served = Counter(e.spec.source.path for e in catalog if not e.builtin)
    programs = _programs(e.spec for e in catalog if not e.builtin)
    left_out = _left_out(s for s, _ in skipped)
    composed = Composed(
        catalog,
        errors,
        partial(list, problems),
        partial(tuple, [s for s, _ in skipped]),
        left_out,
        tuple(pin_problems),
        dict(served),
        key,
        restored=False,
        programs=programs,
    )
    snapshot = None
    if key is not None:  # its stored form, when it has the shape a restored catalog has
        shown = [(left.name, left.reason, left.detail, ref) for left, ref in skipped]
        snapshot = snapshot_of(
            catalog,
            where,
            shown,
            left_out=left_out,
            unmatched_pins=tuple(pin_problems),
            served_sources=dict(served),
            programs=programs,
            errors=errors,
            problems=problems,
            requirements=[
                (req, policy.requirements_fingerprint(req))
                for req in dict.fromkeys(declared.values())
            ],
        )
    return composed, snapshot


def _left_out(skipped: Iterable[Skipped]) -> tuple[LeftOut, ...]:
    by_reason: dict[str, list[str]] = {}
    for left in skipped:
        detail = f" [{left.detail}]" if left.detail else ""
        by_reason.setdefault(left.reason, []).append(f"{left.name}{detail}")
    return tuple(
        (reason, len(names), tuple(names[:EXAMPLES])) for reason, names in by_reason.items()
    )


def _with_proxy(policy: Policy, exposed: list[ToolSpec]) -> list[ToolSpec]:
    """``exposed`` with the proxy (call_tool) right after tool_search when tool_search is
    served, over the manifest tools served. Only a rule that denies call_tool itself leaves it
    out: its calls are decided under the real tool's name, so a default action does not."""
    at = next(
        (i for i, s in enumerate(exposed) if s.is_locked and s.name == TOOL_SEARCH_SPEC.name),
        None,
    )
    if at is None:
        return exposed
    proxy = proxy_spec(s for s in exposed if not s.is_locked)
    decision = policy.decide(proxy, Targets())
    if decision.action == "deny" and decision.scope != "default":
        return exposed
    return [*exposed[: at + 1], proxy, *exposed[at + 1 :]]


def cache_folder(enabled: bool) -> CacheFolder | None:
    """The user's cache folder, when the start-up cache is on."""
    return CacheFolder() if enabled else None


def meter(enabled: bool, what: str, total: int, unit: str = "tools") -> Meter | None:
    """A progress meter on stderr for a start that shows its progress (the command line)."""
    return Meter(what, total, unit) if enabled else None


def write(store: Callable[[], None] | None, tools: int) -> None:
    """Bring the cache up to date: in a forked writer for a big catalog, else here."""
    if store is not None and not (tools >= WRITE_BEHIND_FROM and write_behind(store)):
        store()


def summary(manifests: Manifests, composed: Composed, elapsed: float) -> None:
    """One line about the load on stderr, when it was big or slow enough to be worth one."""
    tools, files = manifests.tool_count, len(manifests.files())
    if tools < 1_000 and elapsed < 1.0:
        return
    if composed.restored:
        how = "all from the cache"
    elif manifests.reused:
        how = f"{files - manifests.reused:,} manifests loaded, {manifests.reused:,} from the cache"
    else:
        how = "none from the cache"
    stderr_line(
        f"{tools:,} tools from {files:,} manifests ({how}); serving {len(composed.catalog):,} "
        f"in {elapsed:.1f} s"
    )


IndexMeter = Callable[[int], Meter | None]


def index_for(
    catalog: Catalog, key: bytes | None, *, cache: bool, meter: IndexMeter
) -> SearchIndex:
    """``catalog``'s search index: the one cached for this catalog (``key``) and ranking, else
    built and cached (see ``write``); its semantic vectors are cached too, once made. The
    search modules are imported here, not before a server's first list (the index of a
    small catalog is made after it: cli/serve.py)."""
    from mcp_toolbridge.catalog import SearchIndex, load_index, store_index, vector_store

    place = (CacheFolder(), key) if cache and key is not None else None
    index = load_index(*place) if place is not None else None
    if index is not None:
        index.embed_from(lambda name: entry.spec if (entry := catalog.get(name)) else None)
    else:
        names = catalog.manifest_names()
        progress = meter(len(names))
        index = SearchIndex.build(
            (entry.spec for name in names if (entry := catalog.get(name)) is not None),
            meter=progress,
        )
        if progress is not None:
            progress.finish(f"indexed {len(names):,} tools")
        if place is not None:
            write(partial(store_index, *place, index), len(names))
    if place is not None:
        index.keep_vectors(vector_store(*place))
    return index


def serving_index_for(
    catalog: Catalog, key: bytes | None, *, cache: bool, meter: IndexMeter
) -> SearchIndex | DeferredIndex:
    """:func:`index_for` for a server: a big index the cache holds is read back in a
    background thread (the server answers meanwhile; a tool_search waits for it). One that
    must be built is built now, on two cores, which a thread would prevent (forking.py)."""
    from mcp_toolbridge.catalog import DeferredIndex, is_stored

    if cache and key is not None and len(catalog) >= DEFER_FROM and is_stored(CacheFolder(), key):
        return DeferredIndex(partial(index_for, catalog, key, cache=cache, meter=meter))
    return index_for(catalog, key, cache=cache, meter=meter)
