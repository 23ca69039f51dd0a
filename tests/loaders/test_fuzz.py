"""Fuzzing every loader with arbitrary and near-valid manifests: only typed problems come out.

Valid documents of each format (the bundled examples and the test fixtures) are mutated: keys
dropped, values of the wrong type, huge strings, odd unicode, deep nesting. Whatever a loader
makes of them, it returns a LoadReport; what it accepts, the catalog can compile and the
server can publish in both protocol eras.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from blake3 import blake3
from hypothesis import given
from hypothesis import strategies as st

from mcp_toolbridge.catalog.catalog import Catalog
from mcp_toolbridge.errors import ErrorCode, Problem
from mcp_toolbridge.loaders import LoadReport, load_file, load_paths
from mcp_toolbridge.server.wire import to_tool
from tests.support import paths
from tests.support.fuzzing import FUZZ, deeply_nested, json_values, mutated
from tests.support.paths import ROOT

FIXTURES = paths.FIXTURES / "manifests"


def _doc(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


AGENTCLI = [_doc(ROOT / "manifests/text-tools/tools.json"), _doc(FIXTURES / "agentcli/tools.json")]
AGENTPM = [
    _doc(ROOT / "manifests/slugify/agent.json"),
    _doc(FIXTURES / "agentpm/word-count/agent.json"),
]
RUNLOOP = [
    _doc(ROOT / "manifests/runloop-echo/tools.json"),
    _doc(FIXTURES / "runloop/notes_bundle/tools.json"),
]


def assert_typed(report: LoadReport) -> None:
    """The report holds only well-formed problems, and everything it accepted can be served."""
    assert isinstance(report, LoadReport)
    for problem in report.problems:
        assert isinstance(problem, Problem)
        assert isinstance(problem.code, ErrorCode)
        assert problem.message.strip(), problem
        assert isinstance(problem.render(), str)
    catalog, _problems = Catalog.build(report.tools)
    for entry in catalog:
        assert isinstance(entry.arguments.validate({}), list)
        output = entry.output
        if output is not None:
            assert isinstance(output.validate({}), list)
        to_tool(entry.spec, modern=True)
        to_tool(entry.spec, modern=False)


def write(folder: Path, name: str, data: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    return path


def encode(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")


@FUZZ
@given(doc=st.sampled_from(AGENTCLI).flatmap(mutated))
def test_agentcli_loader_turns_any_near_valid_tools_json_into_problems(
    tmp_path: Path, doc: Any
) -> None:
    path = write(tmp_path / "agentcli", "tools.json", encode(doc))
    assert_typed(load_file(path))


@FUZZ
@given(doc=st.sampled_from(AGENTPM).flatmap(mutated))
def test_agentpm_loader_turns_any_near_valid_agent_json_into_problems(
    tmp_path: Path, doc: Any
) -> None:
    path = write(tmp_path / "agentpm", "agent.json", encode(doc))
    assert_typed(load_file(path, environ={"WC_TOKEN": "t"}))


@FUZZ
@given(doc=st.sampled_from(RUNLOOP).flatmap(mutated))
def test_runloop_loader_turns_any_near_valid_tools_json_into_problems(
    tmp_path: Path, doc: Any
) -> None:
    folder = tmp_path / "runloop"
    schemas = FIXTURES / "runloop/notes_bundle/schemas"
    for schema in schemas.iterdir():  # the file $refs of the fixture resolve
        write(folder / "schemas", schema.name, schema.read_bytes())
    path = write(folder, "tools.json", encode(doc))
    assert_typed(load_file(path))


TOML_VALUES = st.one_of(
    st.text(max_size=20).map(json.dumps),
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["true", "false", "1.5", "inf", "nan", "1979-05-27", "[]", "{}", '""']),
    st.sampled_from(['"tools.json"', '"../../etc/passwd"', '"/"', '"."', '"no/such.json"']),
    st.builds(lambda n: "[" * n + "]" * n, st.sampled_from([5, 3000])),
    st.text(max_size=30),
)


@st.composite
def bundles(draw: st.DrawFn) -> tuple[str, Any, bool]:
    """(manifest.toml text, tools.json document, whether the digest is made to match)."""
    lines = ["[agent]", 'name = "fuzz"', "[artifacts.tools]"]
    fields = {"path": '"tools.json"', "blake3": "DIGEST", "version": "1"}
    for key in list(fields):
        choice = draw(st.sampled_from(["keep", "keep", "drop", "replace"]))
        if choice == "replace":
            fields[key] = draw(TOML_VALUES)
        if choice != "drop":
            lines.append(f"{key} = {fields[key]}")
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.text(max_size=40)))
    doc = draw(st.sampled_from(RUNLOOP).flatmap(mutated))
    return "\n".join(lines) + "\n", doc, draw(st.booleans())


@FUZZ
@given(bundle=bundles())
def test_bundle_loader_turns_any_near_valid_manifest_toml_into_problems(
    tmp_path: Path, bundle: tuple[str, Any, bool]
) -> None:
    text, doc, digest_matches = bundle
    folder = tmp_path / "bundle"
    data = encode(doc)
    write(folder, "tools.json", data)
    digest = blake3(data).hexdigest() if digest_matches else "0" * 64
    manifest = write(
        folder, "manifest.toml", text.replace("DIGEST", json.dumps(digest)).encode("utf-8")
    )
    assert_typed(load_file(manifest))
    assert_typed(load_paths([folder]))


@FUZZ
@given(
    name=st.sampled_from(["tools.json", "agent.json", "manifest.toml", "x.json"]),
    doc=json_values(20),
)
def test_every_loader_takes_arbitrary_json_and_detection_never_raises(
    tmp_path: Path, name: str, doc: Any
) -> None:
    path = write(tmp_path / "any", name, encode(doc))
    assert_typed(load_file(path))
    assert_typed(load_paths([tmp_path / "any"]))


@FUZZ
@given(data=st.binary(max_size=300))
def test_every_loader_takes_arbitrary_bytes(tmp_path: Path, data: bytes) -> None:
    for name in ("tools.json", "agent.json", "manifest.toml"):
        write(tmp_path / "bytes", name, data)
    assert_typed(load_paths([tmp_path / "bytes"]))


@pytest.mark.parametrize("name", ["tools.json", "agent.json", "manifest.toml"])
@pytest.mark.parametrize("depth", [900, 100_000])
def test_a_manifest_nested_past_the_parsers_recursion_limit_is_a_problem_not_a_crash(
    tmp_path: Path, name: str, depth: int
) -> None:
    if name == "manifest.toml":
        text = "[artifacts.tools]\npath = " + "[" * depth + "]" * depth + "\n"
    else:
        text = '{"tools": [' + "[" * depth + "]" * depth + "]}"
    path = write(tmp_path / "deep", name, text.encode())
    report = load_file(path)
    assert_typed(report)
    assert report.errors


def test_a_tool_schema_nested_hundreds_of_levels_deep_loads_or_is_refused_cleanly(
    tmp_path: Path,
) -> None:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(400):
        schema = {"type": "object", "properties": {"a": schema}}
    tool: dict[str, Any] = {"name": "deep", "command": ["./tools/bin/deep"], "schema": schema}
    path = write(tmp_path / "deepschema", "tools.json", encode({"tools": [tool]}))
    assert_typed(load_file(path))
    tool["schema"] = {"type": "object", "properties": {"a": deeply_nested(400)}}
    assert_typed(load_file(write(tmp_path / "deepschema", "tools.json", encode({"tools": [tool]}))))
