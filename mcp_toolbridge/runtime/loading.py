"""The catalog a runtime serves, loaded from its settings: the manifests read (or taken from
the cache), the policy, the tools it exposes, what was left out and why, and the catalog's
search index."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

from mcp_toolbridge.builtins import TOOL_SEARCH_SPEC, plan_locked
from mcp_toolbridge.catalog import Catalog, Pin
from mcp_toolbridge.errors import Problem, Severity
from mcp_toolbridge.loaders import LoadReport, Manifests, load_manifests
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy import Policy
from mcp_toolbridge.runtime.cache import (
    LeftOut,
    Meter,
    Skipped,
    cache_folder,
    compose,
    index_for,
    meter,
    serving_index_for,
    summary,
    write,
)
from mcp_toolbridge.runtime.settings import Settings
from mcp_toolbridge.secrets import SecretResolver
from mcp_toolbridge.workspace import UNSET_ROOT

if TYPE_CHECKING:
    from mcp_toolbridge.builtins import LockedPlan
    from mcp_toolbridge.catalog import DeferredIndex, SearchIndex

BUILTIN_SPECS: tuple[ToolSpec, ...] = (TOOL_SEARCH_SPEC,)
"""The smallest built-in set (tool_search alone), for catalogs loaded without the locked
tools; ``load_catalog(..., locked=True)`` serves the locked set the settings choose."""


@dataclass(frozen=True)
class Loaded:
    """A catalog, its policy and what was found building it: what a start needs, without
    reading a cached catalog's records (``problems``, ``report``, ``skipped`` read them)."""

    catalog: Catalog
    manifests: Manifests
    policy: Policy
    locked: LockedPlan | None = None
    """The locked tools served, when loaded with ``locked=True``."""
    finding: Callable[[], list[Problem]] = list  # gives ``problems``
    error_list: tuple[Problem, ...] = ()  # the errors among them, known without reading them
    skipping: Callable[[], tuple[Skipped, ...]] = tuple  # gives ``skipped``
    left_out: tuple[LeftOut, ...] = ()
    """What was left out, per reason: (reason, how many, the first few)."""
    unmatched_pins: tuple[Problem, ...] = ()
    """Pins that name no served tool (notices, also among ``problems``)."""
    served_sources: Mapping[str, int] = field(default_factory=dict)
    """How many manifest tools each source file (as tools name it) has in the catalog."""
    key: bytes | None = None
    """Identifies the catalog's content, for the index cache (None: not cacheable)."""
    programs: tuple[str, ...] = ()
    """The absolute paths the manifest tools' commands name (sandbox/guard.py)."""

    @cached_property
    def problems(self) -> list[Problem]:
        """Load, policy and catalog problems, notices included."""
        return self.finding()

    @cached_property
    def skipped(self) -> tuple[Skipped, ...]:
        """Tools left out because the policy refuses them whatever their arguments."""
        return self.skipping()

    @property
    def hidden(self) -> tuple[ToolSpec, ...]:
        return tuple(s.spec for s in self.skipped)

    @property
    def errors(self) -> list[Problem]:
        return list(self.error_list)

    @cached_property
    def report(self) -> LoadReport:
        """Every loaded tool and load problem: reads every cached tool record (seconds at
        100k tools; a start that needs only counts or names asks ``manifests``)."""
        return self.manifests.report()


def load_policy(settings: Settings) -> Policy:
    return Policy.load(
        settings.policy_file,
        workspace=settings.workspace_root(),
        user_data=Path(platformdirs.user_data_dir("mcp-toolbridge")),
        ad_hoc=[p.resolve() for p in settings.ad_hoc],
        allow=settings.allow,
    )


def load_catalog(
    settings: Settings,
    builtins: Sequence[ToolSpec] = (),
    *,
    locked: bool = False,
    manifests: Manifests | None = None,
) -> Loaded:
    """Load the manifests, then keep the tools the policy exposes.

    ``locked``: serve the locked tools ``settings.locked`` names (configured by the policy
    file), instead of the ``builtins`` given. A tool whose requirements cannot be compiled (an
    undefined variable) is a load error; a tool the policy refuses whatever its arguments is
    left out, with a notice. ``manifests``: the manifests as already read, instead of reading
    them again (the policy changed, the manifests did not). With ``settings.cache``, unchanged
    manifests and an unchanged composition come from the cache folder (runtime/cache.py),
    which is brought up to date afterwards, by a forked writer for a big catalog.
    """
    began = time.monotonic()
    policy = load_policy(settings)
    plan = _plan(settings, policy) if locked else None
    if plan is not None:
        builtins = plan.specs
    cache = cache_folder(settings.cache)
    if manifests is None:
        manifests = load_manifests(
            settings.manifest_paths(),
            environ=settings.environ,
            cache=cache,
            meter=partial(_meter, settings, "loading manifests", unit="files"),
        )
    composed, store = compose(
        manifests,
        builtins,
        policy,
        keep_names=settings.keep_names,
        pins=_pins(settings, policy),
        cache=cache,
        meter=partial(_meter, settings) if settings.progress else None,
    )
    write(store, manifests.tool_count)
    if settings.progress:
        summary(manifests, composed, time.monotonic() - began)
    first = list(plan.problems) if plan else []
    return Loaded(
        composed.catalog,
        manifests,
        policy,
        plan,
        finding=lambda: [*first, *composed.problems()],
        error_list=(*(p for p in first if p.severity is Severity.ERROR), *composed.errors),
        skipping=composed.skipped,
        left_out=composed.left_out,
        unmatched_pins=composed.unmatched_pins,
        served_sources=composed.served_sources,
        key=composed.key,
        programs=composed.programs,
    )


def _meter(settings: Settings, what: str, total: int, unit: str = "tools") -> Meter | None:
    return meter(settings.progress, what, total, unit)


def _pins(settings: Settings, policy: Policy) -> list[Pin]:
    origin = str(settings.policy_file or "policy")
    return [
        *(("--pin", p) for p in settings.pins),
        *((origin, p) for p in policy.file.discovery.pin),
    ]


def _plan(settings: Settings, policy: Policy) -> LockedPlan:
    return plan_locked(
        settings.locked,
        workspace=settings.workspace_root() or UNSET_ROOT,
        environ=settings.environ,
        config=policy.file,
        origin=str(settings.policy_file or "default policy"),
        secrets=SecretResolver.from_sources(settings.environ, settings.secrets_file),
        skill_dirs=settings.skills_dirs,
    )


def search_index(settings: Settings, loaded: Loaded) -> SearchIndex:
    """The search index of the catalog's manifest tools, from the cache or built (and cached):
    see runtime/cache.py, index_for."""
    meter = partial(_meter, settings, "indexing")
    return index_for(loaded.catalog, loaded.key, cache=settings.cache, meter=meter)


def serving_index(settings: Settings, loaded: Loaded) -> SearchIndex | DeferredIndex:
    """:func:`search_index` for a server: see runtime/cache.py, serving_index_for."""
    meter = partial(_meter, settings, "indexing")
    return serving_index_for(loaded.catalog, loaded.key, cache=settings.cache, meter=meter)
