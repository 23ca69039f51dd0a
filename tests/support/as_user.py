"""Run a command as an ordinary user: the sandbox as most people run it (CI runs as root).

    python -I tests/support/as_user.py [--restrict-userns] [--reach PATH]... -- COMMAND...

Run as root, it starts COMMAND as ``nobody`` (its user and group, no supplementary group):
first, in a mount namespace of its own, private (nothing it mounts reaches the host), it makes
each ``--reach`` path reachable for that user: a folder above it that only its owner may enter
(``/root``, where pyenv and a root checkout live) is covered with an empty tmpfs holding only
the path, bind-mounted back. Run as an ordinary user, it starts COMMAND as that user.

``--restrict-userns``: COMMAND then runs in a user namespace of its own (mapping its user and
group to themselves) where ``user.max_user_namespaces`` is 0; that limit is per user namespace,
so creating another one fails in there and only there, as on a distribution that restricts
unprivileged user namespaces (Ubuntu 24.04's AppArmor default, ``kernel.unprivileged_userns_
clone=0``, ``user.max_user_namespaces=0``). The host is not touched.

Standard library only (it runs with ``-I``, before the project is reachable). The tests import
:func:`command`, :func:`ordinary_ids` and :func:`hand_over` from here.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import pwd
import stat
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
PR_SET_DUMPABLE = 4
USER = "nobody"


def ordinary_ids() -> tuple[int, int]:
    """The user and group COMMAND runs as: ``nobody``'s under root, else one's own."""
    if os.geteuid() != 0:
        return os.getuid(), os.getgid()
    entry = pwd.getpwnam(USER)
    return entry.pw_uid, entry.pw_gid


def command(
    argv: Sequence[str], *, reach: Sequence[str | Path] = (), restrict: bool = False
) -> list[str]:
    """The command line that runs ``argv`` as the ordinary user (``sys.executable`` must be
    among ``reach`` or reachable when ``argv`` runs Python)."""
    out = [sys.executable, "-I", __file__]
    if restrict:
        out.append("--restrict-userns")
    for path in reach:
        out += ["--reach", str(path)]
    return [*out, "--", *argv]


def hand_over(folder: Path) -> None:
    """Give ``folder`` and what is in it to the ordinary user (under root)."""
    uid, gid = ordinary_ids()
    if os.geteuid() != 0:
        return
    for parent, folders, files in os.walk(folder):
        os.chown(parent, uid, gid)
        for name in (*folders, *files):
            os.chown(os.path.join(parent, name), uid, gid, follow_symlinks=False)


def private_folder(prefix: str) -> Path:
    """A new folder of the ordinary user's under the system's temporary folder (pytest's own
    are root's, 0700, under root), that only the user and root can enter."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    hand_over(folder)
    return folder


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def _enterable(path: str, uid: int, gid: int) -> bool:
    info = os.stat(path)
    if info.st_uid == uid:
        return bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid == gid:
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


def _mount(libc: ctypes.CDLL, source: str, target: str, fstype: str | None, flags: int) -> None:
    encoded = fstype.encode() if fstype else None
    result = libc.mount(source.encode(), target.encode(), encoded, flags, None)
    _check(result, f"mount {source} on {target}")


def _reach(paths: Sequence[str], uid: int, gid: int) -> None:
    """Make each path reachable for uid/gid, in a private mount namespace of this process."""
    libc = _libc()
    _check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _mount(libc, "none", "/", None, MS_REC | MS_PRIVATE)  # nothing propagates to the host
    covers: dict[str, list[str]] = {}
    wanted: list[str] = []
    for path in sorted({os.path.realpath(p) for p in paths}):  # parents first
        if not any(path.startswith(kept.rstrip("/") + "/") for kept in wanted):
            wanted.append(path)
    for path in wanted:
        parts = Path(path).parts
        for depth in range(2, len(parts)):
            above = str(Path(*parts[:depth]))
            if not _enterable(above, uid, gid):
                covers.setdefault(above, []).append(path)
                break
    if not covers:
        return
    held = {path: os.open(path, os.O_PATH) for kept in covers.values() for path in kept}
    for above in covers:
        _mount(libc, "tmpfs", above, "tmpfs", 0)
        os.chmod(above, 0o755)
    for path, fd in held.items():  # bound back from what was opened before it was covered
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(path, mode=0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            Path(path).touch()
        _mount(libc, f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        os.close(fd)


def _restrict_userns(uid: int, gid: int) -> None:
    """A user namespace of this process's own, where no other can be made."""
    libc = _libc()
    _check(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
    _check(libc.unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
    Path("/proc/self/setgroups").write_text("deny", encoding="utf-8")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1\n", encoding="utf-8")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1\n", encoding="utf-8")
    Path("/proc/sys/user/max_user_namespaces").write_text("0\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--restrict-userns", action="store_true")
    parser.add_argument("--reach", action="append", default=[])
    parser.add_argument("argv", nargs="+")
    args = parser.parse_args()
    uid, gid = ordinary_ids()
    if os.geteuid() == 0:  # this interpreter too: it runs on after the switch
        _reach([*args.reach, sys.prefix, sys.base_prefix, sys.executable], uid, gid)
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    if args.restrict_userns:
        _restrict_userns(uid, gid)
    os.execvp(args.argv[0], args.argv)


if __name__ == "__main__":
    main()
