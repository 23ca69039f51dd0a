"""The catalog a start composes from the manifests, the built-in tools and the policy; and
the same, kept between runs so that a start over an unchanged catalog reads no tool record.

Composing checks every tool against the policy (exposed, hidden, or a load error), then
builds the catalog (unique names). Over 100,000 tools that is seconds of work on records
unpickled from the manifest cache, so its outcome is cached too: which tools are served
under which names, which are hidden, and every problem found. The outcome is keyed on all
it is a function of:

- the manifests: each file's fingerprint (its bytes, every file it read, the environment it
  read; see ``loaders.cache``);
- the policy, compiled (``Policy.fingerprint``: its files, variables, rules and scope, with
  paths as canonicalized on this run), and every distinct requirement set the tools declare,
  compiled again on this run and compared (path patterns resolve through the file system);
- the built-in tools served (their specs) and ``--keep-names``;
- this package's version (in every cache file's header).

A restored catalog fetches a tool's record (unpickling its manifest's tools) the first time
something reads it: a search hit, a call, a listing of all tools.
"""

from __future__ import annotations

import pickle
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from mcp_toolbridge.cachefile import CacheFolder, digest
from mcp_toolbridge.cacheform import Compact, compact, expand
from mcp_toolbridge.catalog import Catalog, CatalogEntry, named_as_written
from mcp_toolbridge.errors import ErrorCode, Problem, Severity
from mcp_toolbridge.loaders import FileLoad, Manifests
from mcp_toolbridge.model import RequirementSet, ToolSpec
from mcp_toolbridge.policy import Policy
from mcp_toolbridge.progress import Meter

__all__ = ["Composed", "compose"]

KIND = "served-catalog/2"
Ref = tuple[int, int]
"""Where a tool comes from: (index of its manifest in ``Manifests.items``, its position
there), or (-1, position among the built-in tools)."""
MeterOf = Callable[[str, int, str], Meter | None]


@dataclass(frozen=True)
class Composed:
    """What a start serves: the catalog, the tools the policy hides, every problem found."""

    catalog: Catalog
    errors: list[Problem]
    """The problems that are errors, in order."""
    problems: Callable[[], list[Problem]]
    """Gives every problem, notices included (a big catalog can have tens of thousands of
    notices, which a start only prints when it has errors)."""
    hidden: Callable[[], tuple[ToolSpec, ...]]
    """The tools the policy hides (read on demand: ``policy --show`` only)."""
    key: bytes | None
    """Identifies this catalog's content (the key of its search index in the cache); None
    when it cannot be cached."""
    restored: bool
    """Whether it came from the cache."""


@dataclass
class _Snapshot:
    """A composed catalog as stored: references instead of tool records, and big tables in
    columns (``cachefile.compact``, integer arrays), which read back several times faster
    than as 100,000 pickled tuples."""

    builtins: list[int]
    """The position of each built-in tool served among the built-in tools, in order."""
    names: Compact
    """Each manifest tool served, by MCP name, in catalog order..."""
    items: array[int]
    positions: array[int]
    """...and where each comes from (see ``Ref``)."""
    ids: Compact
    """id -> MCP name of every tool served."""
    hidden: tuple[array[int], array[int]]
    errors: list[Problem]
    problems: bytes
    """Every problem, pickled: read only when asked for."""
    requirements: list[tuple[RequirementSet, bytes]]
    """Every distinct requirement set of the tools, and its compiled fingerprint."""


def _spec(manifests: Manifests, builtins: Sequence[ToolSpec], ref: Ref) -> ToolSpec:
    item, pos = ref
    if item < 0:
        return builtins[pos]
    load = manifests.items[item]
    assert isinstance(load, FileLoad)
    return load.tools()[pos]


def _fetch(
    manifests: Manifests, items: array[int], positions: array[int], name: str, at: object
) -> ToolSpec:
    assert isinstance(at, int)
    spec = _spec(manifests, (), (items[at], positions[at]))
    return spec if spec.name == name else spec.model_copy(update={"name": name})


def _key(
    manifests: Manifests, policy: Policy, builtins: Sequence[ToolSpec], keep_names: bool
) -> bytes | None:
    tools = manifests.fingerprint()
    if tools is None:
        return None
    served = digest(*(spec.model_dump_json() for spec in builtins))  # JSON dumps sort sets
    return digest(tools, policy.fingerprint(), served, "keep" if keep_names else "")


def _snapshot_name(key: bytes) -> str:
    return "served-" + key.hex()[:32] + ".bin"


def compose(
    manifests: Manifests,
    builtins: Sequence[ToolSpec],
    policy: Policy,
    *,
    keep_names: bool,
    cache: CacheFolder | None,
    meter: MeterOf | None = None,
) -> tuple[Composed, Callable[[], None] | None]:
    """The catalog, restored from ``cache`` when it holds it for exactly these inputs, else
    composed; and the work that brings the cache up to date (None: nothing to write), for
    the caller to run now or in a forked writer."""
    key = _key(manifests, policy, builtins, keep_names) if cache is not None else None
    if cache is not None and key is not None:
        stored = cache.read(_snapshot_name(key), KIND)
        if isinstance(stored, _Snapshot) and all(
            policy.requirements_fingerprint(req) == fp for req, fp in stored.requirements
        ):
            composed = _restore(stored, manifests, builtins, key, keep_names)
            return composed, (partial(manifests.store, cache) if manifests.dirty else None)
    composed, snapshot = _compose(manifests, builtins, policy, keep_names, key, meter)
    if cache is None:
        return composed, None

    def store() -> None:
        manifests.store(cache)
        if key is not None:
            name = _snapshot_name(key)
            cache.write(name, KIND, snapshot)
            cache.prune("served-", keep=[name], most=8)

    return composed, store


def _restore(
    stored: _Snapshot,
    manifests: Manifests,
    builtins: Sequence[ToolSpec],
    key: bytes,
    keep_names: bool,
) -> Composed:
    served = [CatalogEntry(builtins[pos]) for pos in stored.builtins]
    names: list[str] = expand(stored.names)
    pending = dict(zip(names, range(len(names)), strict=True))
    fetch = partial(_fetch, manifests, stored.items, stored.positions)
    hidden = partial(_hidden_stored, manifests, builtins, stored.hidden, keep_names)
    catalog = Catalog.deferred(served, pending, fetch, partial(expand, stored.ids))
    problems = partial(pickle.loads, stored.problems)
    return Composed(catalog, list(stored.errors), problems, hidden, key, restored=True)


def _hidden_stored(
    manifests: Manifests,
    builtins: Sequence[ToolSpec],
    columns: tuple[array[int], array[int]],
    keep_names: bool,
) -> tuple[ToolSpec, ...]:
    refs = list(zip(columns[0], columns[1], strict=True))
    return _hidden(manifests, builtins, refs, keep_names)


def _hidden(
    manifests: Manifests, builtins: Sequence[ToolSpec], refs: Sequence[Ref], keep_names: bool
) -> tuple[ToolSpec, ...]:
    specs = (_spec(manifests, builtins, ref) for ref in refs)
    return tuple(named_as_written(s) for s in specs) if keep_names else tuple(specs)


def _columns(refs: Sequence[Ref]) -> tuple[array[int], array[int]]:
    return array("i", (r[0] for r in refs)), array("i", (r[1] for r in refs))


def _compose(
    manifests: Manifests,
    builtins: Sequence[ToolSpec],
    policy: Policy,
    keep_names: bool,
    key: bytes | None,
    meter: MeterOf | None,
) -> tuple[Composed, _Snapshot]:
    """Check every tool against the policy, then build the catalog (and its snapshot)."""
    problems: list[Problem] = list(manifests.problems)
    refs: list[Ref] = [(-1, i) for i in range(len(builtins))]
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
    where: dict[int, Ref] = {}
    hidden: list[Ref] = []
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
            hidden.append(ref)
            problems.append(_not_served(spec))
        if progress is not None and n % 1024 == 0 and progress.due():
            progress.update(n)
    problems.extend(policy.unmatchable_rules(every))
    catalog, catalog_problems = Catalog.build(exposed, keep_names=keep_names)
    problems += catalog_problems
    refs_served = [(entry.name, where[id(entry.spec)]) for entry in catalog]
    from_manifests = [(name, ref) for name, ref in refs_served if ref[0] >= 0]
    items, positions = _columns([ref for _, ref in from_manifests])
    errors = [p for p in problems if p.severity is Severity.ERROR]
    snapshot = _Snapshot(
        builtins=[ref[1] for _, ref in refs_served if ref[0] < 0],
        names=compact([name for name, _ in from_manifests]),
        items=items,
        positions=positions,
        ids=compact(catalog.ids()),
        hidden=_columns(hidden),
        errors=errors,
        problems=pickle.dumps(problems, protocol=pickle.HIGHEST_PROTOCOL),
        requirements=[
            (req, policy.requirements_fingerprint(req)) for req in dict.fromkeys(declared.values())
        ],
    )
    hidden_specs = partial(_hidden, manifests, builtins, hidden, keep_names)
    every_problem: Callable[[], list[Problem]] = partial(list, problems)
    composed = Composed(catalog, errors, every_problem, hidden_specs, key, restored=False)
    return composed, snapshot


def _not_served(spec: ToolSpec) -> Problem:
    return Problem(
        spec.source.path,
        f'tool "{spec.name}" is not served: the policy refuses it whatever its '
        "arguments, or does not grant what it requires",
        spec.source.locator(spec.id),
        ErrorCode.PERMISSION_DENIED,
        Severity.NOTICE,
    )
