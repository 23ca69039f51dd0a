"""A warm start's first answers, before the MCP SDK is imported: the process's entry point
calls :func:`answer_opening` first. When the start-up cache holds an opening
(``cache/opening.py``) for this exact command line, folder, environment and code, and every
input is unchanged, it reads the client's lines from stdin while the server's modules are
imported in a thread, and answers each request that matches a recorded opening (in order,
nothing unrecorded before it) with the SDK's recorded answer and the request's own id. It
stops at the first line that does not match, at the end of stdin, when the openings are
exhausted, or as soon as the import is done; then the real server starts as usual and takes
over (:class:`~mcp_toolbridge.cache.opening.Handoff`): the messages answered are given to
the SDK again, so its session is what it would have been, and their answers dropped.

Only a plain pipe or socket on stdin and stdout is served this way; nothing is ever answered
that the server would not have answered with the same bytes."""

from __future__ import annotations

import os
import select
import stat
import threading
from collections.abc import Callable, Sequence

from mcp_toolbridge.cache.folder import CacheFolder, default_cache_dir
from mcp_toolbridge.cache.opening import (
    Handoff,
    Opening,
    answer_line,
    hand_over,
    message_key,
    read_snapshot,
    snapshot_name,
    unchanged,
    with_id,
)

REPLAY_ID = "toolbridge-opening-{}"
"""The id a request answered by the front carries when it is given to the SDK again."""
_READ_BYTES = 1 << 16
_MAX_LINE = 1 << 20
"""A longer line is never part of an opening: the server reads it (to its own limit)."""
_WAIT_S = 0.05
"""How often a front waiting for the client looks whether the server's import is done."""


def _piped(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def answer_opening(argv: Sequence[str], load: Callable[[], object]) -> None:
    """Answer what a recorded opening answers, with ``load`` (the server's imports) running
    in a thread meanwhile; returns once the server can take over (``load`` done). Leaves a
    :class:`Handoff` for the stdio transport whenever stdin and stdout are pipes (also when
    nothing was answered: the server then records its opening under the same name)."""
    if not (argv and "serve" in argv and _piped(0) and _piped(1)):
        return
    folder = default_cache_dir()
    handoff = Handoff(folder, snapshot_name(argv, os.getcwd(), dict(os.environ)))
    hand_over(handoff)
    try:
        handoff.snapshot = read_snapshot(CacheFolder(folder), handoff.name)
    except Exception:  # a cache that cannot be read is a miss, never a failed start
        handoff.snapshot = None
    if handoff.snapshot is None or not unchanged(handoff.snapshot.inputs):
        return
    handoff.valid = True
    done = threading.Event()

    def imports() -> None:
        try:
            load()
        except BaseException:  # raised again by the import in the main thread
            pass
        finally:
            done.set()

    thread = threading.Thread(target=imports, name="toolbridge-imports", daemon=True)
    thread.start()
    try:
        _answer(handoff, list(handoff.snapshot.openings), done)
    except Exception:  # never a failed start: the server answers what is left, as ever
        pass
    thread.join()  # one thread again: the start forks its loaders and cache writers


def _answer(handoff: Handoff, openings: list[Opening], done: threading.Event) -> None:
    buffer = bytearray()
    try:
        _answer_from(buffer, handoff, openings, done)
    finally:
        handoff.pending = bytes(buffer)


def _answer_from(
    buffer: bytearray, handoff: Handoff, openings: list[Opening], done: threading.Event
) -> None:
    at = 0
    while any(len(o) > at for o in openings):
        end = buffer.find(b"\n")
        if end < 0:
            if handoff.ended or len(buffer) > _MAX_LINE or not _more(buffer, handoff, done):
                break
            continue
        line = bytes(buffer[: end + 1])
        if line.isspace():  # skipped without an answer, as the transport does
            del buffer[: end + 1]
            continue
        found = message_key(line)
        if found is None:
            break
        key, request_id = found
        openings = [o for o in openings if len(o) > at and o[at][0] == key]
        if not openings:
            break
        result = openings[0][at][1]
        at += 1
        private = REPLAY_ID.format(at) if request_id is not None and result else None
        replay = with_id(line, private) if private is not None else line.decode()
        del buffer[: end + 1]  # taken: the server is given it again (replay) below
        handoff.replayed.append((replay, private, result))
        if private is None or result is None or request_id is None:
            continue
        try:
            _write(answer_line(result, request_id))
        except OSError:  # the client is gone: the server finds out as it would have
            break


def _more(buffer: bytearray, handoff: Handoff, done: threading.Event) -> bool:
    """Read what the client wrote next into ``buffer``; False when the server is ready to
    take over first (its import is done)."""
    while not done.is_set():
        readable, _, _ = select.select([0], [], [], _WAIT_S)
        if readable:
            chunk = os.read(0, _READ_BYTES)
            if not chunk:
                handoff.ended = True
            buffer += chunk
            return True
    return False


def _write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]
