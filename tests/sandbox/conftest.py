"""A workspace, a fake home folder with a private key, and real sandboxed children.

The sandbox tests run only where bubblewrap can create a sandbox (Linux with unprivileged user
namespaces, as on the project's machines and CI); elsewhere they are skipped, saying why."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_toolbridge.executors import ProcessOutcome, probe_sandbox, run_process
from mcp_toolbridge.policy import Policy, SandboxMode
from mcp_toolbridge.sandbox import Confinement, Sandbox

Grants = Mapping[str, Sequence[str]]
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY----- fake -----END OPENSSH PRIVATE KEY-----\n"


@pytest.fixture(scope="session")
def sandbox_support() -> None:
    support = anyio.run(probe_sandbox, Sandbox("auto", home=None))
    if not support.ok:
        pytest.skip(f"this machine cannot run the OS sandbox: {support.reason}")


@dataclass
class Box:
    """Folders of one test: ``ws`` the workspace, ``home`` a fake home with ~/.ssh/id_ed25519,
    ``outside`` a folder no capability grants. ``warm``: every sandboxed run goes to a warm
    sandbox (sandbox/warm.py), made ready for it first, and the test fails if it does not."""

    root: Path
    warm: bool = False

    def __post_init__(self) -> None:
        self.sandboxes: dict[SandboxMode, Sandbox] = {}
        self.ws = self.root / "ws"
        self.home = self.root / "home"
        self.outside = self.root / "outside"
        for folder in (self.ws, self.home / ".ssh", self.outside):
            folder.mkdir(parents=True)
        (self.home / ".ssh" / "id_ed25519").write_text(PRIVATE_KEY, encoding="utf-8")

    @property
    def env(self) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home)}

    def policy(self, requires: Grants | None = None) -> Policy:
        """The default grant ({workspace} read and write) plus ``requires``: more ``read``,
        ``write`` and ``hosts`` patterns."""
        more = requires or {}
        grants = {
            "fs.read": ["{workspace}", *more.get("read", [])],
            "fs.write": ["{workspace}", *more.get("write", [])],
            "net.hosts": list(more.get("hosts", [])),
        }
        lines = [f"{key} = {json.dumps(value)}" for key, value in grants.items()]
        path = self.root / "policy.toml"
        path.write_text('default_action = "allow"\n[requires]\n' + "\n".join(lines) + "\n")
        return Policy.load(path, workspace=self.ws, user_data=None)

    def confine(
        self, mode: SandboxMode = "required", requires: Grants | None = None
    ) -> Confinement:
        sandbox = self.sandboxes.get(mode) or Sandbox(mode, home=self.home)
        self.sandboxes[mode] = sandbox
        scope = self.policy(requires).scope
        return sandbox.confine(sandbox.profile(scope, tool="probe"))

    async def python(
        self,
        script: str,
        *,
        mode: SandboxMode = "required",
        requires: Grants | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        argv: Sequence[str] = (),
    ) -> ProcessOutcome:
        """Run ``python3 -c script [argv...]`` in the sandbox; the capability check never sees
        inside."""
        confinement = self.confine(mode, requires)
        run = functools.partial(
            run_process,
            stdin=None,
            cwd=str(cwd or self.ws),
            env={**self.env, **(env or {})},
            timeout_s=20,
            sandbox=confinement,
        )
        with anyio.fail_after(30):
            if not self.warm or mode == "off":
                return await run([sys.executable, "-I", "-c", script, *argv])
            pool = confinement.sandbox.warm
            before = pool.taken
            for _ in range(2):  # the second launch of a sandbox's options makes a warm one
                known = set(pool.sandboxes)
                await run([sys.executable, "-I", "-c", "pass"])
                if pool.taken > before:
                    break  # there is one already
                made = [s for s in pool.sandboxes if s not in known]
                if made:
                    await anyio.wait_readable(made[0].control)  # its zygote says it is ready
                    break
            taken = pool.taken
            outcome = await run([sys.executable, "-I", "-c", script, *argv])
            assert pool.taken == taken + 1, "the run did not go to the warm sandbox"
            return outcome

    def close(self) -> None:
        for sandbox in self.sandboxes.values():
            sandbox.close()


def report(outcome: ProcessOutcome) -> Any:
    """The JSON the script printed last (its stderr in the failure message)."""
    assert outcome.exit_code == 0, outcome.stderr_tail.decode()
    return json.loads(outcome.stdout.decode().strip().splitlines()[-1])


@pytest.fixture
def box(tmp_path: Path, sandbox_support: None) -> Iterator[Box]:
    box = Box(tmp_path)
    yield box
    box.close()
