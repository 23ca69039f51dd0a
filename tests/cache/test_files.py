"""The rule every cache uses to tell whether a file it was made from is still that file."""

from __future__ import annotations

from pathlib import Path

from blake3 import blake3

from mcp_toolbridge.cache.files import settled_signature, signature, unchanged_file


def test_a_file_changed_just_now_keeps_no_signature(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text("{}")
    now = signature(path.stat())
    assert settled_signature(now, now) is None  # its ctime is now: it could change again
    assert settled_signature(None, now) is None
    assert settled_signature(now, None) is None


def test_a_signature_is_kept_only_when_the_file_did_not_change_while_read() -> None:
    old = (1, 2, 3, 10, 10)  # changed in 1970: long settled
    assert settled_signature(old, old) == old
    assert settled_signature(old, (1, 2, 4, 10, 10)) is None


def test_a_recorded_file_is_unchanged_only_with_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text("{}")
    digest = blake3(b"{}").digest()
    assert unchanged_file(str(path), digest, None)  # no signature: hashed
    assert unchanged_file(str(path), digest, signature(path.stat()))
    path.write_text("[]")
    assert not unchanged_file(str(path), digest, None)
    assert not unchanged_file(str(tmp_path / "gone.json"), digest, None)
    assert unchanged_file(str(tmp_path / "gone.json"), None, None)  # unreadable then and now
