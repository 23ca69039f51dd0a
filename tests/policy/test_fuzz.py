"""Fuzzing policy files: any TOML text gives a Policy or one ConfigError (policy.invalid).

Operator files (``--policy``) and project files (``<workspace>/.toolbridge/policy.toml``) are
generated three ways: arbitrary text, the default policy with lines dropped or changed, and
documents built from the real keys with values of every shape. A policy that loads is then
used: rendered, and asked about real tools and arguments.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mcp_toolbridge.builtins import bash, tool_search_spec
from mcp_toolbridge.builtins.fs import read as fs_read
from mcp_toolbridge.builtins.fs import write as fs_write
from mcp_toolbridge.errors import ConfigError, ErrorCode
from mcp_toolbridge.loaders import load_paths
from mcp_toolbridge.policy.compiled import Policy
from mcp_toolbridge.policy.file import DEFAULT_POLICY_TOML, PROJECT_POLICY
from mcp_toolbridge.policy.show import render_policy
from mcp_toolbridge.runtime import Settings, load_catalog
from tests.support.fuzzing import FUZZ
from tests.support.paths import ROOT

SPECS = [
    *load_paths([ROOT / "manifests"], environ={}).tools,
    bash.SPEC,
    fs_read.SPEC,
    fs_write.SPEC,
    tool_search_spec.SPEC,
]
ARGUMENTS: list[dict[str, Any]] = [
    {},
    {"command": "git status && rm -rf / ; echo $(cat /etc/passwd)"},
    {"path": "../../etc/shadow", "file_path": "/tmp/x", "pattern": "**"},
    {"url": "http://[::1]:99999/x", "text": "é" * 100},
]

SAFE_TEXT = st.text(
    st.characters(blacklist_categories=["Cs"]), max_size=24
)  # TOML text is UTF-8: no lone surrogates
PATHS = st.one_of(
    st.sampled_from(
        [
            "{workspace}",
            "{workspace}/../..",
            "{user_data}/x",
            "{nope}",
            "{",
            "}",
            "/",
            "",
            "~",
            "relative/dir",
            "**",
            "/tmp/[",
            "{workspace}/{workspace}",
        ]
    ),
    SAFE_TEXT,
)
WORDS = st.one_of(
    st.sampled_from(
        ["read", "write", "edit", "bash", "glob", "grep", "web_fetch", "*", "", "git *", "["]
    ),
    SAFE_TEXT,
)
HOSTS = st.one_of(
    st.sampled_from(["*.example.com", "*", "", "a:b", "[::1]", "http://x/", "127.0.0.1:80"]),
    SAFE_TEXT,
)
ACTIONS = st.one_of(st.sampled_from(["allow", "deny", "ask", "by-safety"]), SAFE_TEXT)
VALID_ACTIONS = st.sampled_from(["allow", "deny", "ask"])
RULE_WORDS = st.sampled_from(["read", "write", "edit", "bash", "glob", "grep", "web_fetch", "*"])


def _toml_string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _toml(value: object) -> str:
    """A TOML literal for strings, numbers, booleans, lists and inline tables."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, int | float):
        return repr(value) if not isinstance(value, float) else json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_string(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    raise TypeError(value)


ANY_VALUE: st.SearchStrategy[Any] = st.recursive(
    st.one_of(
        st.booleans(),
        st.integers(-(2**63), 2**63 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        SAFE_TEXT,
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(SAFE_TEXT, inner, max_size=3)
    ),
    max_leaves=6,
)


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a value of the right shape, sometimes anything at all."""
    return st.one_of(strategy, strategy, strategy, ANY_VALUE)


def _rule(loose: bool) -> st.SearchStrategy[dict[str, Any]]:
    words, actions = (WORDS, ACTIONS) if loose else (RULE_WORDS, VALID_ACTIONS)
    wrap = _maybe if loose else (lambda strategy: strategy)
    return st.fixed_dictionaries(
        {"permission": wrap(words), "action": wrap(actions)},
        optional={
            "pattern": wrap(st.one_of(words, PATHS, st.builds(lambda p: {"prefix": p}, words)))
        },
    )


SHELL = st.fixed_dictionaries(
    {"cmd": WORDS},
    optional={
        "args": st.lists(
            st.one_of(
                WORDS, st.just({"wildcard": True}), st.builds(lambda p: {"prefix": p}, WORDS)
            ),
            max_size=3,
        )
    },
)


@st.composite
def policy_documents(draw: st.DrawFn) -> str:
    """A policy built from the real keys: in a loose document any value may have any shape,
    in a strict one every value has the right shape (so many of them load and get used)."""
    loose = draw(st.booleans())
    wrap = _maybe if loose else (lambda strategy: strategy)
    lines: list[str] = []
    top = {
        "default_action": ACTIONS
        if loose
        else st.sampled_from(["allow", "deny", "ask", "by-safety"]),
        "grant": st.sampled_from(["declared", "policy"]),
        "trust_project_allow": st.booleans(),
    }
    for key, strategy in top.items():
        if draw(st.booleans()):
            lines.append(f"{key} = {_toml(draw(wrap(strategy)))}")
    if draw(st.booleans()):
        lines.append("[requires]")
        for key, strategy in {
            "fs.read": st.lists(PATHS, max_size=3),
            "fs.write": st.lists(PATHS, max_size=3),
            "net.hosts": st.lists(HOSTS, max_size=3),
            "capabilities": st.lists(WORDS, max_size=3),
            "shell": st.lists(SHELL, max_size=2),
        }.items():
            if draw(st.booleans()):
                lines.append(f"{key} = {_toml(draw(wrap(strategy)))}")
    if draw(st.booleans()):
        value = draw(wrap(st.booleans()))
        lines += ["[security]", f"confirm_external_actions = {_toml(value)}"]
    if draw(st.booleans()):
        command = draw(wrap(st.lists(WORDS, min_size=1, max_size=2)))
        timeout = draw(wrap(st.floats(0.1, 300)))
        lines += ["[watchdog]", f"command = {_toml(command)}", f"timeout_s = {_toml(timeout)}"]
    for rule in draw(st.lists(_rule(loose), max_size=4)):
        lines.append("[[rules]]")
        lines += [f"{key} = {_toml(value)}" for key, value in rule.items()]
    return "\n".join(lines) + "\n"


@st.composite
def mutated_default(draw: st.DrawFn) -> str:
    """The default policy with lines dropped, values replaced or garbage inserted."""
    lines = DEFAULT_POLICY_TOML.splitlines()
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(lines) - 1))
        edit = draw(st.sampled_from(["drop", "value", "insert"]))
        if edit == "drop":
            del lines[i]
        elif edit == "value" and " = " in lines[i]:
            lines[i] = lines[i].split(" = ", 1)[0] + " = " + _toml(draw(ANY_VALUE))
        else:
            lines.insert(i, draw(SAFE_TEXT))
        if not lines:
            break
    return "\n".join(lines) + "\n"


TEXTS = st.one_of(policy_documents(), mutated_default(), SAFE_TEXT)


def load_or_refuse(tmp_path: Path, operator: str | None, project: str | None) -> None:
    workspace = tmp_path / "ws"
    (workspace / PROJECT_POLICY).parent.mkdir(parents=True, exist_ok=True)
    project_file = workspace / PROJECT_POLICY
    project_file.unlink(missing_ok=True)
    if project is not None:
        project_file.write_text(project, encoding="utf-8")
    policy_file = None
    if operator is not None:
        policy_file = tmp_path / "policy.toml"
        policy_file.write_text(operator, encoding="utf-8")
    try:
        policy = Policy.load(policy_file, workspace=workspace, user_data=tmp_path / "data")
    except ConfigError as exc:
        assert exc.code is ErrorCode.POLICY_INVALID
        assert str(exc).strip()
        return
    assert isinstance(render_policy(policy, SPECS), str)
    for spec in SPECS:
        assert isinstance(policy.requirement_problems(spec), list)
        if not policy.exposed(spec):
            continue
        for arguments in ARGUMENTS:
            targets = policy.targets(spec, arguments)
            if policy.check_capabilities(spec, targets) is None:
                assert policy.decide(spec, targets).action in ("allow", "deny", "ask")


@FUZZ
@given(text=TEXTS)
def test_any_operator_policy_text_loads_or_is_refused_as_policy_invalid(
    tmp_path: Path, text: str
) -> None:
    load_or_refuse(tmp_path, text, None)


@FUZZ
@given(text=st.one_of(policy_documents(), SAFE_TEXT))
def test_any_project_policy_text_loads_or_is_refused_as_policy_invalid(
    tmp_path: Path, text: str
) -> None:
    load_or_refuse(tmp_path, None, text)


def test_a_policy_nested_past_the_toml_parsers_recursion_limit_is_refused(tmp_path: Path) -> None:
    deep = "[" * 5000 + "]" * 5000
    load_or_refuse(tmp_path, f"default_action = {deep}\n", None)
    load_or_refuse(tmp_path, None, f"rules = {deep}\n")


def test_a_policy_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    policy_file = tmp_path / "policy.toml"
    policy_file.write_bytes(b'default_action = "\xff\xfe"\n')
    try:
        Policy.load(policy_file, workspace=tmp_path, user_data=tmp_path)
    except ConfigError as exc:
        assert exc.code is ErrorCode.POLICY_INVALID
    else:
        raise AssertionError("a non-UTF-8 policy file was accepted")


def test_a_manifest_tool_requiring_a_path_with_control_characters_is_a_load_problem(
    tmp_path: Path,
) -> None:
    tool = {
        "id": "ctl.read",
        "description": "Reads a path with a control character in it.",
        "transport": {"kind": "exec", "command": "/bin/cat"},
        "input_schema": {"type": "object"},
        "result_schema": {"type": "object"},
        "capabilities": ["fs.read:/tmp/\u0001x", "net:a\u0002b", "\u001f"],
    }
    folder = tmp_path / "ctl"
    folder.mkdir()
    (folder / "tools.json").write_text(json.dumps({"version": 1, "tools": [tool]}))
    loaded = load_catalog(Settings(paths=[folder], audit=False, workspace=tmp_path))
    assert "ctl_read" not in loaded.catalog
    assert {p.code for p in loaded.errors} == {ErrorCode.MANIFEST_INVALID}
    assert any("control character" in p.message for p in loaded.errors), loaded.errors
