"""Runs inside the sandbox, never in the server: the sandbox's only way out.

usage: python -I -S relay.py SOCKET PORT LIMITS PROGRAM ARGV0 [ARG...]

A sandbox whose tool is granted specific hosts has a network namespace of its own with nothing
but loopback in it. This script listens on 127.0.0.1:PORT there (``HTTP_PROXY`` and
``HTTPS_PROXY`` point at it), relays every connection to the server's allowlisting proxy
through the unix socket SOCKET (bind-mounted into the sandbox), and runs the command as its
child: ``PROGRAM`` with ``ARGV0`` as ``argv[0]``, under the call's resource limits (LIMITS:
``nproc=1024,nofile=4096,...``, set in the child only, as ``rlimit.py`` sets them). It exits
with the command's status (128 + N for a command killed by signal N, as a shell reports it);
the sandbox's PID namespace then ends, and with it every process left.

Standard library only, started with ``-I -S``: it must not depend on the server's
environment, and it decides nothing (the proxy does).
"""

import os
import resource
import socket
import sys
import threading

CHUNK = 64 * 1024
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


def pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            upstream.close()
            continue
        threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()


def main() -> None:
    path, port, limits, program, *argv = sys.argv[1:]
    listener = socket.create_server(("127.0.0.1", int(port)))
    pid = os.fork()
    if pid == 0:
        listener.close()
        try:
            set_limits(limits)
            os.execv(program, argv)
        except (OSError, ValueError) as exc:  # ValueError: a limit above the hard one
            reason = getattr(exc, "strerror", None) or exc
            os.write(2, f"cannot start {program!r}: {reason}\n".encode())
            os._exit(127)
    os.close(0)  # the command holds the pipes; the relay must not keep them open
    os.close(1)
    threading.Thread(target=serve, args=(listener, path), daemon=True).start()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        os._exit(128 + os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
