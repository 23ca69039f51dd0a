"""Console sessions every replica honours (console/signed.py): signed with a key derived from
the shared request-state keys, opened by any replica with the same keys (the newest signs,
every one opens: a rotation keeps sessions), refused when altered, signed with another
service's keys, or expired; the CSRF token is the session's under the same key."""

from __future__ import annotations

import secrets

from mcp_toolbridge.console.signed import SessionSigner

OLD, NEW = secrets.token_hex(32), secrets.token_hex(32)


def test_a_session_signed_by_one_replica_opens_on_another_and_nowhere_else() -> None:
    here, there = SessionSigner([NEW]), SessionSigner([NEW])
    sid = here.session("alice")
    assert there.open(sid) == "alice"
    assert there.csrf_ok(sid, here.csrf(sid)) and not there.csrf_ok(sid, "0" * 64)
    assert here.tag == there.tag
    stranger = SessionSigner([OLD])
    assert stranger.open(sid) is None and stranger.tag != here.tag


def test_an_altered_or_expired_session_opens_as_nobody() -> None:
    signer = SessionSigner([NEW], lifetime_s=60)
    sid = signer.session("alice", now=1000.0)
    assert signer.open(sid, now=1059.0) == "alice"
    assert signer.open(sid, now=1061.0) is None
    version, payload, signature = sid.split(".")
    for altered in (
        f"{version}.{payload[:-2]}AA.{signature}",
        f"{version}.{payload}.{signature[:-2]}AA",
        f"v2.{payload}.{signature}",
        "v1.not-base64!.x",
        "",
    ):
        if altered != sid:
            assert signer.open(altered, now=1000.0) is None


def test_after_a_rotation_sessions_and_forms_of_the_old_key_still_open() -> None:
    before, after = SessionSigner([OLD]), SessionSigner([NEW, OLD])
    sid = before.session("bob")
    assert after.open(sid) == "bob"
    assert after.csrf_ok(sid, before.csrf(sid))
    assert SessionSigner([NEW]).open(sid) is None  # the old key retired: it no longer opens
