"""A watchdog whose script its own sandbox cannot see: the first setup most people write (a
script in a folder of their own, run by python3) denied every call with "exited with status 2".
Now the refusal says the sandbox hid the script, and the ``[watchdog] read`` entry that shows
it; with that entry the same watchdog answers. A real sandbox, a real script, served to a
client in both eras."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mcp_toolbridge.runtime import Settings
from tests.sandbox.conftest import Box
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.results import text_of
from tests.support.served import served_client

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

ALLOWING = "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'verdict': 'allow'}))\n"


def _serving(box: Box, watchdog: str) -> Settings:
    """An echo tool the rules allow, and a policy whose watchdog is ``watchdog`` (TOML)."""
    agentcli_manifest(box.root / "m", [echo_tool("echo")], {"echo": ECHO})
    policy = box.root / "policy.toml"
    policy.write_text(f'default_action = "allow"\n\n[watchdog]\n{watchdog}', encoding="utf-8")
    return Settings(
        paths=[box.root / "m"],
        workspace=box.ws,
        environ=box.env,
        policy_file=policy,
        sandbox="required",
        audit=False,
    )


def _guard(box: Box, body: str = ALLOWING) -> Path:
    """The watchdog script, in a folder no grant shows (under the test's /tmp folder, which
    is a private, empty /tmp inside every sandbox)."""
    guard = box.root / "guard" / "check.py"
    guard.parent.mkdir()
    guard.write_text(body, encoding="utf-8")
    return guard


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_watchdog_its_sandbox_cannot_see_says_so_and_how_to_show_it(
    box: Box, mode: str
) -> None:
    guard = _guard(box)
    command = f"command = {json.dumps([sys.executable, str(guard)])}\n"
    settings = _serving(box, command)
    async with served_client(settings, mode) as client:
        refused = await client.call_tool("echo", {"text": "hi"})
    text = text_of(refused)
    assert refused.is_error, text
    assert (refused.meta or {}).get("toolbridge/code") == "permission.denied"
    assert text.startswith(
        f"Denied by watchdog: the watchdog exited with status 2: its OS sandbox hides {guard}, "
        "which its command names (a watchdog sees the system folders, its program, the "
        "policy's fs.read roots and its [watchdog] read entries); add "
        f'read = ["{guard.parent}"] under [watchdog] in {settings.policy_file}, or move the '
        "file into a folder it sees."
    )

    shown = _serving(box, command + 'read = ["guard"]\n')  # relative to the policy's folder
    async with served_client(shown, mode) as client:
        allowed = await client.call_tool("echo", {"text": "hi"})
    assert not allowed.is_error, text_of(allowed)
    assert allowed.structured_content == {"echo": {"text": "hi"}}


async def test_a_watchdog_that_fails_with_its_script_in_view_is_not_blamed_on_the_sandbox(
    box: Box,
) -> None:
    guard = _guard(box, "import sys\nsys.exit(3)\n")
    command = f'command = {json.dumps([sys.executable, str(guard)])}\nread = ["guard"]\n'
    async with served_client(_serving(box, command)) as client:
        refused = await client.call_tool("echo", {"text": "hi"})
    text = text_of(refused)
    assert text.startswith("Denied by watchdog: the watchdog exited with status 3. "), text
    assert "sandbox" not in text
