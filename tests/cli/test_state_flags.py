"""serve --state: a URL that is not Redis's, or shared state without the request-state keys
every replica must share, is refused before anything serves (exit 2, saying what to do)."""

from __future__ import annotations

import pytest

from mcp_toolbridge.cli.main import main
from tests.support.redis_server import free_port


def _serve(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["serve", "--no-audit", "--http", "127.0.0.1:0", *argv])
    return code, capsys.readouterr().err


def test_shared_state_without_shared_keys_refuses_to_start(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLBRIDGE_STATE_KEYS", raising=False)
    code, err = _serve(capsys, "--state", f"redis://127.0.0.1:{free_port()}/0")
    assert code == 2
    assert "shared state needs request-state keys every replica shares" in err
    assert "TOOLBRIDGE_STATE_KEYS" in err


def test_a_short_key_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLBRIDGE_STATE_KEYS", "0123456789abcdef" * 4 + ",short")
    code, err = _serve(capsys, "--state", f"redis://127.0.0.1:{free_port()}/0")
    assert code == 2 and "key 2 is shorter than 32 bytes" in err


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://127.0.0.1:6379/0", "expected redis://HOST:PORT/DB"),
        ("redis://127.0.0.1:6379/zero", "the database is a number"),
    ],
)
def test_a_state_url_that_is_not_redis_is_refused(
    capsys: pytest.CaptureFixture[str], url: str, says: str
) -> None:
    code, err = _serve(capsys, "--state", url)
    assert code == 2 and says in err


def test_a_replica_name_that_cannot_be_in_a_session_id_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLBRIDGE_STATE_KEYS", "0123456789abcdef" * 4)
    url = f"redis://127.0.0.1:{free_port()}/0"
    code, err = _serve(capsys, "--state", url, "--replica", "Has Spaces")
    assert code == 2 and "--replica 'Has Spaces'" in err
