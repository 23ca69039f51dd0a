"""server.json, what the official MCP registry lists, checked against the registry's published
schema (tests/fixtures/registry/, with its source and licence) and against the package it
names: the same name and version as pyproject.toml, the ``mcp-name:`` line the registry reads
in the PyPI description (the README) to prove who owns the package, and arguments that
``serve`` accepts. tests/package/ starts the server the entry describes, from the built wheel."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator, FormatChecker

from mcp_toolbridge import __version__
from mcp_toolbridge.cli.parsing import parse_args

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "tests" / "fixtures" / "registry" / "server.schema.json"


def _server() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
    return data


def _validator() -> Draft7Validator:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    Draft7Validator.check_schema(schema)
    return Draft7Validator(schema, format_checker=FormatChecker())


def test_server_json_is_valid_against_the_registrys_published_schema() -> None:
    server = _server()
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in _validator().iter_errors(server)]
    assert errors == []
    assert server["$schema"] == json.loads(SCHEMA.read_text(encoding="utf-8"))["$id"]


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"name": "mcp-toolbridge"}, "no namespace"),
        ({"description": "x" * 101}, "too long"),
        ({"version": 1}, "not a string"),
    ],
)
def test_the_schema_refuses_what_the_registry_refuses(change: dict[str, Any], why: str) -> None:
    assert list(_validator().iter_errors({**_server(), **change})), why


def test_server_json_names_this_package_at_this_version_with_its_owners_mcp_name() -> None:
    server = _server()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert server["version"] == project["version"] == __version__
    (package,) = server["packages"]
    assert package["registryType"] == "pypi"
    assert package["identifier"] == project["name"]
    assert package["version"] == project["version"]
    assert project["readme"] == "README.md"  # the PyPI description, where the registry looks
    readme = (ROOT / project["readme"]).read_text(encoding="utf-8")
    assert re.findall(r"mcp-name: (\S+)", readme) == [server["name"]]


def test_the_package_arguments_are_what_serve_accepts(tmp_path: Path) -> None:
    (package,) = _server()["packages"]
    argv: list[str] = []
    for argument in package["packageArguments"]:
        value = argument.get("value", str(tmp_path))
        if argument["type"] == "named":
            argv += [argument["name"], value]
        else:
            argv.append(value)
    assert argv[0] == "serve"
    args = parse_args(argv)
    assert args.verb == "serve"
    assert args.workspace == tmp_path
    assert args.paths == [tmp_path]
