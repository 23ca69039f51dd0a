from mcp_toolbridge.names import LOCKED_TOOL_IDS, NAME_PATTERN, sanitize_name


def test_sanitize_replaces_dots_slashes_and_scopes() -> None:
    assert sanitize_name("mail.smtp_send") == "mail_smtp_send"
    assert sanitize_name("@zack/summarize-text") == "zack_summarize-text"


def test_sanitize_keeps_long_ids_distinct_and_within_64() -> None:
    a = sanitize_name("x" * 80 + "a")
    b = sanitize_name("x" * 80 + "b")
    assert a != b
    assert NAME_PATTERN.match(a) and NAME_PATTERN.match(b)


def test_locked_ids_are_the_thirteen_of_the_contract() -> None:
    assert len(LOCKED_TOOL_IDS) == 13
    assert "tool_search" in LOCKED_TOOL_IDS
