"""A URL with credentials in a tool's output keeps its host and path: only the secret in its
user information is replaced. A password assignment near the URL turns on betterleaks'
``generic-username`` component, which reads ``user:`` in ``https://user:TOKEN@github.com`` as
a key and took ``TOKEN@github.com/x.git`` as its value, so the host went with the secret.
Driven through the SDK client in both eras (bash and read of real files), with several token
kinds, a plain password, a token as the user name and a URL as a password's value."""

from __future__ import annotations

import random
import string
from pathlib import Path

import mcp_types as types
import pytest

from mcp_toolbridge.leaks.engine import Engine
from mcp_toolbridge.leaks.urls import credential_part, userinfo_ends
from tests.support.served import OPEN_POLICY, locked_settings, served_client

MODES = ["auto", "legacy"]
ALNUM = string.ascii_letters + string.digits
_rng = random.Random(31)


def _r(n: int) -> str:
    return "".join(_rng.choice(ALNUM) for _ in range(n))


GITHUB = "ghp_" + _r(36)
GITHUB_APP = "ghs_" + _r(36)
GITLAB = "glpat-" + _r(20)
PASSWORD = _r(18)
DEPLOY = _r(22)
NEARBY = _r(16)
SECRETS = [GITHUB, GITHUB_APP, GITLAB, PASSWORD, DEPLOY, NEARBY]
CONFIG = f"""[remote "origin"]
\turl = https://user:{GITHUB}@github.com/acme/x.git
\tpassword = {NEARBY}
[remote "mirror"]
\turl = https://oauth2:{GITLAB}@gitlab.com/acme/x.git
[remote "ci"]
\turl = https://{GITHUB_APP}@github.com/acme/ci.git
database: postgres://app:{PASSWORD}@db.internal:5432/app
login: https://deploy:{DEPLOY}@git.internal.net/a/b.git
password = {NEARBY}
"""
EXPECTED = [
    "url = https://user:[REDACTED:github-pat]@github.com/acme/x.git",
    "url = https://oauth2:[REDACTED:gitlab-pat]@gitlab.com/acme/x.git",
    "url = https://[REDACTED:github-app-token]@github.com/acme/ci.git",
    "database: postgres://app:[REDACTED:url-password]@db.internal:5432/app",
    "login: https://deploy:[REDACTED:url-password]@git.internal.net/a/b.git",
    "password = [REDACTED:generic-password]",
]
POLICY = OPEN_POLICY


@pytest.mark.parametrize("mode", MODES)
async def test_credentials_in_urls_are_redacted_and_the_hosts_kept(tmp_path: Path, mode: str):
    settings = locked_settings(tmp_path, POLICY)
    assert settings.workspace is not None
    (settings.workspace / "config").write_text(CONFIG, encoding="utf-8")
    async with served_client(settings, mode, locked=True) as client:
        shown = await client.call_tool("bash", {"command": "cat config"})
        read = await client.call_tool("read", {"file_path": "config"})
    for result in (shown, read):
        assert not result.is_error, result
        [block] = [c for c in result.content if isinstance(c, types.TextContent)]
        for line in EXPECTED:
            assert line in block.text, (line, block.text)
        for secret in SECRETS:
            assert secret not in block.text


def test_a_password_assigned_a_url_keeps_the_url():
    text = f"password=https://bob:{DEPLOY}@example.org/r\n"
    assert Engine().scan(text)[0].value == DEPLOY


@pytest.mark.parametrize(
    ("text", "value", "parts"),
    [
        ("u https://user:TOKEN@h.io/x y", "TOKEN@h.io/x", ["TOKEN"]),
        ("u https://user:TOKEN@h.io/x y", "https://user:TOKEN@h.io/x", ["TOKEN"]),
        ("u https://TOKEN@h.io/x y", "TOKEN@h.io/x", ["TOKEN"]),
        ("u https://user:p@ss@h.io/x y", "p@ss@h.io/x", ["p@ss"]),  # a raw @ stays in it
        ("mail alice@h.io and https://u:pw@h.io", "alice@h.io", []),  # not a URL's
        ("u https://user:TOKEN@h.io/x y", "TOKEN", []),  # the secret alone: as it is
    ],
)
def test_a_value_is_cut_at_the_end_of_a_urls_user_information(text, value, parts):
    assert credential_part(value, text, userinfo_ends(text)) == parts
