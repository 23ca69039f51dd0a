"""Search beyond ASCII: scripts written without spaces, folded accents and compatibility forms,
mixed text, and tools whose ids had to be transliterated."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcp_toolbridge.catalog.index import SearchIndex
from mcp_toolbridge.catalog.text import default_analyzer, split_clauses, split_words
from mcp_toolbridge.names import NAME_PATTERN, sanitize_name
from tests.catalog.test_index import tool

CATALOG = [
    tool("translate_text", "翻译文本到中文", {"text": "要翻译的文本"}),
    tool("translate_config", "配置翻译服务的 API key 和默认目标语言"),
    tool("api_key_rotate", "Rotate an API key and revoke the old one"),
    tool("send_email", "发送电子邮件给指定的收件人"),
    tool("weather_forecast", "查询城市未来七天的天气预报"),
    tool("ebook_search", "搜索电子书和图书馆藏书"),
    tool("jp_file_read", "ファイルを読み込んで内容を返します"),
    tool("jp_send_mail", "メールを送信します。宛先と件名を指定できます"),
    tool("jp_guide", "ガイドを表示します"),
    tool("jp_weather", "指定した地域の天気予報を取得します"),
    tool("ko_file_read", "파일을 읽고 내용을 반환합니다"),
    tool("th_food", "สั่งอาหาร กินข้าว"),
    tool("café_menu", "Show the menu and opening hours"),
    tool("fr_meteo", "Prévisions météo pour une ville française"),
    tool("de_verkehr", "Staus auf deutschen Straßen melden"),
    tool("read_pdf", "Extract the text of a PDF file"),
    tool("get_weather", "Get the current weather for a city"),
]


@pytest.fixture(scope="module")
def index() -> SearchIndex:
    return SearchIndex.build(CATALOG)


def first(index: SearchIndex, query: str) -> str:
    hits = index.search(query, 3)
    assert hits, f"nothing found for {query!r}"
    return hits[0].name


@pytest.mark.parametrize("query", ["翻译", "中文", "翻译文本", "把这段话翻译成中文"])
def test_a_chinese_description_is_found_by_any_of_its_words(index: SearchIndex, query: str) -> None:
    assert first(index, query) == "translate_text"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("天气预报", "weather_forecast"),  # Chinese 气
        ("天気予報", "jp_weather"),  # Japanese 気: another character, another tool
        ("ファイルを読む", "jp_file_read"),
        ("メール送信", "jp_send_mail"),
        ("파일", "ko_file_read"),  # Korean: the particle of 파일을 does not hide the word
        ("ข้าว", "th_food"),  # Thai: a vowel mark does not cut the word apart
    ],
)
def test_cjk_and_thai_words_are_found_inside_unspaced_text(
    index: SearchIndex, query: str, expected: str
) -> None:
    assert first(index, query) == expected


def test_a_one_character_query_finds_the_character_inside_a_word(index: SearchIndex) -> None:
    assert first(index, "书") == "ebook_search"


def test_a_chinese_query_matches_no_unrelated_tool(index: SearchIndex) -> None:
    # The lexical leg: no bigram or character of 翻译 matches another tool. The semantic leg
    # then adds the tools nearest in meaning, after the two that match.
    lexical = SearchIndex.build(CATALOG, semantic=False)
    assert [h.name for h in lexical.search("翻译", 10)] == ["translate_text", "translate_config"]
    assert [h.name for h in index.search("翻译", 10)][:2] == ["translate_text", "translate_config"]


def test_mixed_chinese_and_english_ranks_the_tool_with_both_first(index: SearchIndex) -> None:
    hits = [h.name for h in index.search("翻译 API key", 3)]
    assert hits == ["translate_config", "api_key_rotate", "translate_text"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("cafe", "cafe_menu"),
        ("café", "cafe_menu"),
        ("CAFÉ menu", "cafe_menu"),
        ("meteo", "fr_meteo"),
        ("prévisions météo", "fr_meteo"),
        ("strassen", "de_verkehr"),
        ("ＰＤＦ", "read_pdf"),  # full-width letters
        ("ﾒｰﾙ", "jp_send_mail"),  # half-width katakana
    ],
)
def test_accents_and_compatibility_forms_fold(
    index: SearchIndex, query: str, expected: str
) -> None:
    assert first(index, query) == expected


def test_a_transliterated_tool_is_found_by_its_id_as_written(index: SearchIndex) -> None:
    assert first(index, "café_menu") == "cafe_menu"
    assert [h.name for h in index.search("select:café_menu,cafe_menu")] == ["cafe_menu"]


def test_folding_keeps_marks_that_make_another_letter() -> None:
    # Kana voicing: ガ is not カ; Hangul syllables and Thai words come back whole.
    assert split_words("ガイド") == ["ガイ", "イド", "ガ", "イ", "ド"]
    assert split_words("カイド") == ["カイ", "イド", "カ", "イ", "ド"]
    assert split_words("파일") == ["파일", "파", "일"]
    assert split_words("ข้าว") == ["ข้า", "าว", "ข้", "า", "ว"]
    assert split_words("हिन्दी भाषा") == ["हिन्दी", "भाषा"]


def test_unspaced_runs_give_their_bigrams_then_their_characters() -> None:
    assert split_words("翻译文本") == ["翻译", "译文", "文本", "翻", "译", "文", "本"]
    assert split_words("书") == ["书"]
    assert default_analyzer().terms("翻译 API key") == ["翻译", "翻", "译", "api", "key"]


def test_a_change_of_script_splits_a_word() -> None:
    assert split_words("API密钥") == ["api", "密钥", "密", "钥"]
    assert split_words("getCaféInfo") == ["get", "cafe", "info"]
    assert split_words("Straße Øre ΑΘΗΝΑ") == ["strasse", "ore", "αθηνα"]


def test_chinese_and_japanese_full_stops_end_a_clause() -> None:
    assert split_clauses("查天气。然后发邮件！") == ["查天气", "然后发邮件"]
    assert split_clauses("天気を調べる。メールを送信") == ["天気を調べる", "メールを送信"]


def test_a_request_in_two_chinese_sentences_gets_both_tools(index: SearchIndex) -> None:
    hits = [h.name for h in index.search("查询天气预报。发送电子邮件", 2)]
    assert sorted(hits) == ["send_email", "weather_forecast"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
@example("9\n:0\ue000")  # two clauses whose terms score 0: covering kept no candidate
def test_any_text_finds_the_tool_it_describes(text: str) -> None:
    words = split_words(text)
    assert all(word and not any(c.isspace() for c in word) for word in words)
    index = SearchIndex.build([tool("described", text), tool("other", "unrelated words")])
    if default_analyzer().terms(text) and not text.strip().lower().startswith("select:"):
        assert "described" in [h.name for h in index.search(text, 2)]


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=80))
def test_any_id_sanitizes_to_a_valid_mcp_name(raw: str) -> None:
    assert NAME_PATTERN.fullmatch(sanitize_name(raw))
