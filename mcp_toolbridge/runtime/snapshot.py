"""A composed catalog as the start-up cache keeps it (runtime/cache.py composes it): the key
it is kept under, the stored form (:class:`Snapshot`: the locked tools as they are,
references instead of manifest tool records, big tables in columns), and the specs read back
through those references, on demand."""

from __future__ import annotations

import pickle
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcp_toolbridge.cache import Compact, compact, digest
from mcp_toolbridge.catalog import Catalog, Pin, named_as_written
from mcp_toolbridge.errors import Problem
from mcp_toolbridge.loaders import FileLoad, Manifests
from mcp_toolbridge.model import RequirementSet, ToolSpec
from mcp_toolbridge.policy import Policy

KIND = "served-catalog/3"
Ref = tuple[int, int]
"""Where a manifest tool comes from: (index of its manifest in ``Manifests.items``, its
position there)."""
LeftOut = tuple[str, int, tuple[str, ...]]
"""A reason tools were left out, how many, and the first few of them (``name [detail]``)."""
Shown = tuple[str, str, str, Ref | None]
"""A tool the policy left out: its name, the reason, its detail, where it comes from."""


@dataclass
class Snapshot:
    """A composed catalog as stored: the locked tools as they are (a dozen), references
    instead of manifest tool records, and big tables in columns (``cache/columns.py``), which read
    back several times faster than 100,000 pickled tuples."""

    locked: list[ToolSpec]
    """The locked tools served (the proxy included, pins applied), in catalog order."""
    names: Compact
    """Each manifest tool served, by MCP name, in catalog order after the locked ones..."""
    items: array[int]
    positions: array[int]
    """...and where each comes from (see ``Ref``)."""
    pinned: frozenset[int]
    """The manifest tools served pinned, by their place in ``names``."""
    ids: Compact
    """id -> MCP name of every tool served."""
    skipped: Compact
    skipped_refs: tuple[array[int], array[int]]
    skipped_why: list[tuple[str, str]]
    """Per tool left out: its name, where it comes from, its (reason, detail)."""
    left_out: tuple[LeftOut, ...]
    unmatched_pins: tuple[Problem, ...]
    served_sources: dict[str, int]
    programs: tuple[str, ...]
    errors: list[Problem]
    problems: bytes
    """Every problem, pickled: read only when asked for."""
    requirements: list[tuple[RequirementSet, bytes]]
    """Every distinct requirement set of the tools, and its compiled fingerprint."""


def catalog_key(
    manifests: Manifests,
    policy: Policy,
    builtins: Sequence[ToolSpec],
    keep_names: bool,
    pins: Sequence[Pin],
) -> bytes | None:
    """What a composed catalog is a function of, digested (see runtime/cache.py); None
    when the manifests cannot be fingerprinted."""
    tools = manifests.fingerprint()
    if tools is None:
        return None
    served = digest(*(spec.model_dump_json() for spec in builtins))  # JSON dumps sort sets
    return digest(
        tools, policy.fingerprint(), served, "keep" if keep_names else "", repr(list(pins))
    )


def snapshot_name(key: bytes) -> str:
    return "served-" + key.hex()[:32] + ".bin"


def snapshot_of(
    catalog: Catalog,
    where: Mapping[int, Ref | None],
    skipped: Sequence[Shown],
    *,
    left_out: tuple[LeftOut, ...],
    unmatched_pins: tuple[Problem, ...],
    served_sources: dict[str, int],
    programs: tuple[str, ...],
    errors: list[Problem],
    problems: list[Problem],
    requirements: list[tuple[RequirementSet, bytes]],
) -> Snapshot | None:
    """``catalog`` as stored (``where``: each served spec's ``Ref`` by ``id``); None when it
    is not in the shape a restored catalog has (a locked tool among the manifest tools, or
    left out), which is then not cached."""
    entries = [(entry, where.get(id(entry.spec))) for entry in catalog]
    locked = [entry.spec for entry, _ in entries if entry.builtin]
    from_manifests = [(entry, ref) for entry, ref in entries if not entry.builtin]
    in_order = all(entry.builtin for entry, _ in entries[: len(locked)])
    if not in_order or any(ref is None for _, ref in from_manifests):
        return None
    if any(ref is None for *_, ref in skipped):  # a locked tool left out: keep it simple
        return None
    manifest_refs = [ref for _, ref in from_manifests if ref is not None]
    skipped_refs = [ref for *_, ref in skipped if ref is not None]
    return Snapshot(
        locked=locked,
        names=compact([entry.name for entry, _ in from_manifests]),
        items=array("i", (r[0] for r in manifest_refs)),
        positions=array("i", (r[1] for r in manifest_refs)),
        pinned=frozenset(i for i, (entry, _) in enumerate(from_manifests) if entry.spec.pinned),
        ids=compact(catalog.ids()),
        skipped=compact([name for name, *_ in skipped]),
        skipped_refs=(
            array("i", (r[0] for r in skipped_refs)),
            array("i", (r[1] for r in skipped_refs)),
        ),
        skipped_why=[(reason, detail) for _, reason, detail, _ in skipped],
        left_out=left_out,
        unmatched_pins=unmatched_pins,
        served_sources=served_sources,
        programs=programs,
        errors=errors,
        problems=pickle.dumps(problems, protocol=pickle.HIGHEST_PROTOCOL),
        requirements=requirements,
    )


def _spec(manifests: Manifests, ref: Ref) -> ToolSpec:
    load = manifests.items[ref[0]]
    assert isinstance(load, FileLoad)
    return load.tools()[ref[1]]


def served_spec(
    manifests: Manifests, stored: Snapshot, keep_names: bool, name: str, at: object
) -> ToolSpec:
    """The spec of the manifest tool served at ``at`` in ``stored`` (a restored catalog's
    fetch), named and pinned as it was composed."""
    assert isinstance(at, int)
    spec = _spec(manifests, (stored.items[at], stored.positions[at]))
    if keep_names:
        spec = named_as_written(spec)
    return spec.model_copy(update={"pinned": True}) if at in stored.pinned else spec


def hidden_spec(manifests: Manifests, ref: Ref, keep_names: bool) -> ToolSpec:
    """The spec of a tool the policy left out, named as it was composed."""
    spec = _spec(manifests, ref)
    return named_as_written(spec) if keep_names else spec
