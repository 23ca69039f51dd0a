"""The seccomp filter of every sandbox: system calls no tool needs, which widen the kernel's
attack surface, fail with ``EPERM``; everything else is allowed.

Refused (container runtimes' defaults, trimmed to what an unprivileged process in a user
namespace can still reach): the kernel keyring (``keyctl``, ``add_key``, ``request_key``),
``bpf``, ``userfaultfd``, ``perf_event_open``, ``kexec_*``, module loading, every mount call
(``mount``, ``umount2``, ``pivot_root`` and the new mount API), ``setns``, ``unshare`` and
``clone`` with a namespace flag, ``io_uring_*``, ``personality`` asking for
``READ_IMPLIES_EXEC`` or ``MMAP_PAGE_ZERO``, ``open_by_handle_at``, ``acct``, ``swapon``,
``swapoff``, ``reboot``, ``syslog``, ``quotactl``, ``lookup_dcookie``, ``uselib``, ``vm86``.
``clone3`` fails with ``ENOSYS`` (its flags are behind a pointer a filter cannot read), so the
C library falls back to ``clone``, whose flags it can. ``ptrace`` stays allowed: inside the
sandbox it reaches only the call's own processes (the zygote is not dumpable), and debuggers
and ``strace`` are tools. The filter covers the machine's other ABIs too (i386 and x32 on
x86-64, arm on aarch64), so a 32-bit program cannot go around it.

Built with libseccomp (``libseccomp.so.2``, on every distribution that ships bubblewrap), called
through ctypes, once per process; bubblewrap installs it (``--seccomp FD``) just before it runs
the command, after setting the sandbox up. Where libseccomp is missing the sandbox runs without
it and says so (:func:`unavailable`: ``doctor``, ``inspect``, a warning when the sandbox is
probed)."""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform

LIBRARY = "libseccomp.so.2"
ACT_ALLOW = 0x7FFF0000
CMP_MASKED_EQ = 7
REFUSED = (
    "keyctl", "add_key", "request_key", "bpf", "userfaultfd", "perf_event_open",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "mount", "umount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "setns", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "open_by_handle_at", "acct", "swapon", "swapoff",
    "reboot", "syslog", "quotactl", "lookup_dcookie", "uselib", "vm86", "vm86old",
)  # fmt: skip
"""Refused whatever their arguments."""
NAMESPACE_FLAGS = (
    0x00000080,  # CLONE_NEWTIME
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)
"""``clone`` and ``unshare`` with any of these are refused."""
PERSONALITY_REFUSED = (0x0400000, 0x0100000)
"""``READ_IMPLIES_EXEC`` and ``MMAP_PAGE_ZERO``; ``personality(0xffffffff)`` (a query, with
every bit set) is not refused."""
_QUERY_BIT = 0x80000000
_OTHER_ABIS = {"x86_64": ("x86", "x32"), "aarch64": ("arm",)}


class _ArgCmp(ctypes.Structure):
    _fields_ = (
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    )


def _errno_action(number: int) -> int:
    return 0x00050000 | (number & 0xFFFF)


@functools.cache
def program() -> bytes | None:
    """The filter as bubblewrap reads it (a BPF program); None where libseccomp is missing."""
    try:
        return _build()
    except OSError:
        return None


@functools.cache
def unavailable() -> str | None:
    """Why there is no filter here (None: there is one)."""
    try:
        _build()
    except OSError as exc:
        return f"no seccomp filter: {exc}"
    return None


@functools.cache
def _build() -> bytes:
    try:
        lib = ctypes.CDLL(LIBRARY, use_errno=True)
    except OSError as exc:
        raise OSError(
            errno.ENOENT,
            f"{LIBRARY} cannot be loaded ({exc}); install libseccomp "
            "(Debian, Ubuntu: apt install libseccomp2; Fedora: dnf install libseccomp)",
        ) from None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = (ctypes.c_uint32,)
    lib.seccomp_release.argtypes = (ctypes.c_void_p,)
    lib.seccomp_arch_resolve_name.argtypes = (ctypes.c_char_p,)
    lib.seccomp_arch_resolve_name.restype = ctypes.c_uint32
    lib.seccomp_arch_add.argtypes = (ctypes.c_void_p, ctypes.c_uint32)
    lib.seccomp_syscall_resolve_name.argtypes = (ctypes.c_char_p,)
    lib.seccomp_rule_add_array.argtypes = (
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    )
    lib.seccomp_export_bpf.argtypes = (ctypes.c_void_p, ctypes.c_int)
    context = lib.seccomp_init(ACT_ALLOW)
    if not context:
        raise OSError(errno.ENOMEM, "seccomp_init failed")
    try:
        for name in _OTHER_ABIS.get(platform.machine(), ()):
            arch = lib.seccomp_arch_resolve_name(name.encode())
            if arch:
                lib.seccomp_arch_add(context, arch)  # -EEXIST where it is the native one

        def rule(action: int, name: str, *masked: tuple[int, int]) -> None:
            number = lib.seccomp_syscall_resolve_name(name.encode())
            if number < 0:
                return  # not a system call of this machine (or this libseccomp)
            args = (_ArgCmp * max(len(masked), 1))()
            for i, (mask, value) in enumerate(masked):
                args[i] = _ArgCmp(0, CMP_MASKED_EQ, mask, value)
            done = lib.seccomp_rule_add_array(context, action, number, len(masked), args)
            if done < 0:
                raise OSError(-done, f"seccomp_rule_add({name}): {os.strerror(-done)}")

        refuse = _errno_action(errno.EPERM)
        for name in REFUSED:
            rule(refuse, name)
        for flag in NAMESPACE_FLAGS:
            rule(refuse, "clone", (flag, flag))
            rule(refuse, "unshare", (flag, flag))
        for flag in PERSONALITY_REFUSED:
            rule(refuse, "personality", (flag | _QUERY_BIT, flag))
        rule(_errno_action(errno.ENOSYS), "clone3")
        out = os.memfd_create("seccomp", os.MFD_CLOEXEC)
        try:
            done = lib.seccomp_export_bpf(context, out)
            if done < 0:
                raise OSError(-done, f"seccomp_export_bpf: {os.strerror(-done)}")
            size = os.lseek(out, 0, os.SEEK_END)
            return os.pread(out, size, 0)
        finally:
            os.close(out)
    finally:
        lib.seccomp_release(context)


def open_program(data: bytes) -> int:
    """A descriptor bubblewrap reads the filter from (``--seccomp FD``): a memfd at offset 0,
    inheritable by the spawned bubblewrap only through ``pass_fds``."""
    fd = os.memfd_create("seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd
