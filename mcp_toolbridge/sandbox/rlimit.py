"""Runs inside a fresh sandbox, never in the server, where ``prlimit`` is missing: sets the
call's resource limits (``limits.py``), then runs the command in its place.

usage: python -I -S rlimit.py LIMITS PROGRAM ARGV0 [ARG...]

LIMITS is ``nproc=1024,nofile=4096,...`` (soft and hard alike). Standard library only,
started with ``-I -S``; the zygote and the relay set the same limits the same way.
"""

import os
import resource
import sys

RESOURCES = {
    "nproc": resource.RLIMIT_NPROC,
    "nofile": resource.RLIMIT_NOFILE,
    "data": resource.RLIMIT_DATA,
    "fsize": resource.RLIMIT_FSIZE,
    "core": resource.RLIMIT_CORE,
}


def set_limits(encoded: str) -> None:
    for item in filter(None, encoded.split(",")):
        name, value = item.split("=", 1)
        resource.setrlimit(RESOURCES[name], (int(value), int(value)))


def main() -> None:
    limits, program, *argv = sys.argv[1:]
    try:
        set_limits(limits)
        os.execv(program, argv)
    except (OSError, ValueError) as exc:  # ValueError: a limit above the hard one
        reason = getattr(exc, "strerror", None) or exc
        os.write(2, f"cannot start {program!r}: {reason}\n".encode())
        os._exit(127)


if __name__ == "__main__":
    main()
