import pytest

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


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("café_menu", "cafe_menu"),  # accents folded
        ("Straße.Ørsted", "Strasse_Orsted"),  # letters with no accent to drop
        ("ｃａｆé", "cafe"),  # full-width
        ("翻译文本", "FanYiWenBen"),  # Chinese: pinyin
        ("ファイル読込", "fuairuDuYu"),  # Japanese kana: romaji
        ("파일_읽기", "PaIl_IlgGi"),  # Korean
        ("получить.файл", "poluchit_fayl"),  # Cyrillic; the soft sign's apostrophe joins the "_"
        ("\ue000", "tool"),  # nothing transliterable left: as before
    ],
)
def test_sanitize_transliterates_ids_that_are_not_ascii(raw: str, name: str) -> None:
    assert sanitize_name(raw) == name
    assert NAME_PATTERN.match(sanitize_name(raw))


def test_sanitize_keeps_long_transliterated_ids_distinct() -> None:
    a = sanitize_name("翻译" * 40 + "甲")
    b = sanitize_name("翻译" * 40 + "乙")
    assert a != b
    assert NAME_PATTERN.match(a) and NAME_PATTERN.match(b)
