"""JSON Schema: the only package that imports jsonschema.

- :func:`check_schema` (``meta.py``) meta-validates a declared schema and returns one-line
  problems with the JSON pointer inside the schema, in jsonschema's words (for whoever wrote
  the schema).
- :func:`compile_schema` (``compiled.py``) builds a :class:`CompiledSchema` once; its
  ``problems`` and ``validate`` are on the hot path of every call and say what a value got
  wrong so that whoever sent it can fix it (``explain.py``): ``at /title: expected at most 40
  characters; got 80 ("xxxx…")``, shallow errors first, then in document order.
- :func:`bundle_refs`, :func:`inline_refs` and :func:`model_facing` (``refs.py``) rewrite
  schemas: ``schema:ID`` refs embedded, written in place again for clients, ``"visibility":
  "internal"`` properties stripped.
- :func:`cleaned_texts` (``texts.py``) rewrites every ``title`` and ``description`` string of a
  schema (the loaders remove the characters that hide text from them).

May import: nothing of the project but lazy.py (the vocabulary's level). Names are imported on
first use: a start that only rewrites and checks schemas never imports jsonschema."""

from typing import TYPE_CHECKING

from mcp_toolbridge.lazy import on_first_use

if TYPE_CHECKING:
    from mcp_toolbridge.schemas.compiled import CompiledSchema, compile_schema
    from mcp_toolbridge.schemas.explain import SchemaProblem
    from mcp_toolbridge.schemas.meta import check_schema
    from mcp_toolbridge.schemas.refs import (
        SCHEMA_REF_PREFIX,
        bundle_refs,
        inline_refs,
        model_facing,
    )
    from mcp_toolbridge.schemas.texts import cleaned_texts

__all__ = [
    "SCHEMA_REF_PREFIX",
    "CompiledSchema",
    "SchemaProblem",
    "bundle_refs",
    "check_schema",
    "cleaned_texts",
    "compile_schema",
    "inline_refs",
    "model_facing",
]
__getattr__ = on_first_use(
    __name__,
    {
        "mcp_toolbridge.schemas.compiled": ("CompiledSchema", "compile_schema"),
        "mcp_toolbridge.schemas.explain": ("SchemaProblem",),
        "mcp_toolbridge.schemas.meta": ("check_schema",),
        "mcp_toolbridge.schemas.refs": (
            "SCHEMA_REF_PREFIX",
            "bundle_refs",
            "inline_refs",
            "model_facing",
        ),
        "mcp_toolbridge.schemas.texts": ("cleaned_texts",),
    },
)
