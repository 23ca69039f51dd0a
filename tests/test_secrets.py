from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_toolbridge.errors import ConfigError, ErrorCode, SecretError
from mcp_toolbridge.secrets import (
    SecretResolver,
    redact,
    redact_value,
    secret_env_name,
    secret_forms,
)


def write_secrets(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "secrets.toml"
    path.write_text(text)
    os.chmod(path, mode)
    return path


def test_secret_env_name_upper_cases_and_joins_runs_of_other_characters_with_underscores():
    assert secret_env_name("runloop/mail/smtp_api_key") == "RUNLOOP_MAIL_SMTP_API_KEY"
    assert secret_env_name("mail.smtp.key") == "MAIL_SMTP_KEY"
    assert secret_env_name("a -- b//c9") == "A_B_C9"


def test_a_secret_is_resolved_from_its_toolbridge_secret_environment_variable():
    environ = {"TOOLBRIDGE_SECRET_RUNLOOP_MAIL_SMTP_API_KEY": "k-123", "HOME": "/home/x"}
    resolver = SecretResolver.from_sources(environ, None)

    assert resolver.resolve(["runloop/mail/smtp_api_key"]) == {"runloop/mail/smtp_api_key": "k-123"}


def test_a_secrets_file_with_top_level_pairs_and_a_secrets_table_is_read(tmp_path: Path):
    path = write_secrets(
        tmp_path,
        '"runloop/mail/smtp_api_key" = "top-value"\n\n[secrets]\n"mail.smtp.key" = "table-value"\n',
    )
    resolver = SecretResolver.from_sources({}, path)

    assert resolver.resolve(["runloop/mail/smtp_api_key", "mail.smtp.key"]) == {
        "runloop/mail/smtp_api_key": "top-value",
        "mail.smtp.key": "table-value",
    }


def test_the_environment_overrides_the_secrets_file(tmp_path: Path):
    path = write_secrets(tmp_path, '"api/key" = "from-file"\n"other" = "file-only"\n')
    resolver = SecretResolver.from_sources({"TOOLBRIDGE_SECRET_API_KEY": "from-env"}, path)

    assert resolver.resolve(["api/key", "other"]) == {"api/key": "from-env", "other": "file-only"}


def test_an_empty_environment_value_falls_back_to_the_file(tmp_path: Path):
    path = write_secrets(tmp_path, '"api/key" = "from-file"\n')
    resolver = SecretResolver.from_sources({"TOOLBRIDGE_SECRET_API_KEY": ""}, path)

    assert resolver.resolve(["api/key"]) == {"api/key": "from-file"}


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o644])
def test_a_secrets_file_open_to_group_or_others_is_refused_with_the_chmod_fix(
    tmp_path: Path, mode: int
):
    path = write_secrets(tmp_path, '"api/key" = "v"\n', mode)

    with pytest.raises(ConfigError) as caught:
        SecretResolver.from_sources({}, path)

    assert caught.value.code is ErrorCode.SECRETS_INVALID
    assert str(path) in str(caught.value)
    assert f"chmod 600 {path}" in str(caught.value)


def test_a_secrets_file_that_is_not_toml_is_refused(tmp_path: Path):
    path = write_secrets(tmp_path, "this is = = not toml\n")

    with pytest.raises(ConfigError, match="is not valid TOML") as caught:
        SecretResolver.from_sources({}, path)

    assert caught.value.code is ErrorCode.SECRETS_INVALID


def test_an_unquoted_dotted_id_is_refused_with_a_hint_to_quote_it(tmp_path: Path):
    path = write_secrets(tmp_path, 'mail.smtp.key = "v"\n')

    with pytest.raises(ConfigError, match=r'"mail" must be a string; quote secret ids'):
        SecretResolver.from_sources({}, path)


def test_a_missing_secrets_file_is_refused_naming_it(tmp_path: Path):
    path = tmp_path / "absent.toml"

    with pytest.raises(ConfigError, match="cannot open it") as caught:
        SecretResolver.from_sources({}, path)

    assert str(path) in str(caught.value)


def test_an_unresolvable_id_names_the_id_and_where_it_looked_but_no_value(tmp_path: Path):
    path = write_secrets(tmp_path, '"known" = "file-secret-value"\n')
    resolver = SecretResolver.from_sources({"TOOLBRIDGE_SECRET_OTHER": "env-secret-value"}, path)

    with pytest.raises(SecretError) as caught:
        resolver.resolve(["known", "runloop/mail/smtp_api_key"], tool="send_mail")

    message = str(caught.value)
    assert caught.value.code is ErrorCode.SECRET_UNRESOLVED
    assert caught.value.tool == "send_mail"
    assert '"runloop/mail/smtp_api_key"' in message
    assert "TOOLBRIDGE_SECRET_RUNLOOP_MAIL_SMTP_API_KEY" in message
    assert str(path) in message
    assert "secret-value" not in message


def test_without_a_secrets_file_the_error_says_how_to_give_one():
    resolver = SecretResolver.from_sources({}, None)

    with pytest.raises(SecretError, match=r'secrets "a", "b" are not set.*--secrets FILE'):
        resolver.resolve(["a", "b"])


def test_redact_replaces_every_occurrence_longest_value_first_and_ignores_empty_values():
    secrets = {"short": "abc", "long": "abcdef", "empty": ""}

    text = redact("x abcdef y abc z abcdef", secrets)

    assert text == "x [redacted:long] y [redacted:short] z [redacted:long]"


def test_redact_value_recurses_through_keys_lists_and_objects():
    secrets = {"k": "s3cr3t"}
    value = {"s3cr3t": ["a s3cr3t b", {"n": 1, "t": "s3cr3t"}], "ok": True}

    assert redact_value(value, secrets) == {
        "[redacted:k]": ["a [redacted:k] b", {"n": 1, "t": "[redacted:k]"}],
        "ok": True,
    }


@given(
    value=st.text(alphabet="0123456789", min_size=1, max_size=8),
    parts=st.lists(st.text(alphabet="0123456789abc ", max_size=10), max_size=5),
)
def test_redacted_text_never_contains_the_secret_value(value: str, parts: list[str]):
    text = value.join(parts) + value

    assert value not in redact(text, {"id": value})


def test_a_short_value_is_redacted_as_written_and_escaped_but_never_encoded():
    """Under 8 characters a value's base64, hex or reversed text would redact noise, and so
    would ``a+b`` for ``a b``; a percent-escape is never noise."""
    assert secret_forms("a b/c") == {"a b/c", "a%20b%2Fc", "a%20b/c", "a+b%2Fc"}
    assert secret_forms("a b") == {"a b", "a%20b"}
    long = secret_forms("0123456789")
    assert {"MDEyMzQ1Njc4OQ==", "30313233343536373839", "9876543210"} <= long
    assert all(len(form) >= 8 for form in long - {"0123456789"})
