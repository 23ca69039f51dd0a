"""SearchIndex: tokenizing, ranking guarantees, select:, visibility, clauses, determinism."""

from __future__ import annotations

import random
from typing import Any

import pytest

from mcp_toolbridge.catalog import index as index_module
from mcp_toolbridge.catalog import ranking_config
from mcp_toolbridge.catalog.index import SearchHit, SearchIndex
from mcp_toolbridge.catalog.text import (
    Analyzer,
    default_analyzer,
    snowball_english,
    split_clauses,
    split_words,
    strip_courtesies,
    value_kinds,
    without_values,
)
from mcp_toolbridge.model import BuiltinTransport, Format, Source, ToolSpec
from mcp_toolbridge.names import sanitize_name


def tool(
    tool_id: str,
    description: str,
    params: dict[str, str] | None = None,
    *,
    namespace: str = "",
    tags: tuple[str, ...] = (),
    title: str | None = None,
) -> ToolSpec:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {k: {"type": "string", "description": v} for k, v in (params or {}).items()},
    }
    return ToolSpec(
        name=sanitize_name(tool_id),
        id=tool_id,
        namespace=namespace,
        title=title,
        description=description,
        input_schema=schema,
        runtime_input_schema=schema,
        tags=tags,
        transport=BuiltinTransport(name=tool_id),
        source=Source(path="catalog.json", index=0, format=Format.BUILTIN),
    )


CATALOG = [
    tool(
        "get_time",
        "Get current time for an IANA timezone",
        {"timezone": "IANA timezone, e.g. Europe/Helsinki", "tz": "Alias for timezone"},
        namespace="goagent",
    ),
    tool("word_count", "Count words, lines and characters in a text", {"text": "Text to count"}),
    tool(
        "http_fetch",
        "Safe HTTP/HTTPS fetcher with byte cap and redirects",
        {"url": "Absolute http or https URL to download", "method": "GET or HEAD"},
        namespace="goagent",
    ),
    tool(
        "fs_read_file",
        "Read a repository-relative file as base64 with optional offset and max bytes",
        {"path": "File path relative to the repository"},
        namespace="goagent",
    ),
    tool(
        "fs_write_file",
        "Write bytes to a repository-relative file, creating parent folders",
        {"path": "File path relative to the repository", "content": "Base64 content"},
        namespace="goagent",
    ),
    tool(
        "translate-text",
        "Translate text into a target language using LLM.",
        {"text": "The text to be translated", "target_language": "Language to translate into"},
        namespace="translate-text",
    ),
    tool(
        "summarize-text",
        "Summarize input text into a few sentences.",
        {"text": "Text to summarize", "max_words": "Upper bound on summary length"},
        namespace="summarize-text",
    ),
    tool(
        "sentiment-analysis",
        "Classify the sentiment of a text as positive, negative or neutral.",
        {"text": "Text to classify"},
        namespace="sentiment-analysis",
    ),
    tool(
        "resize-image",
        "Resize an image to the given width and height in pixels.",
        {"image_url": "URL of the image", "width": "Width in pixels", "height": "Height"},
        namespace="resize-image",
    ),
    tool(
        "mail.smtp_send",
        "Send an email message via the configured SMTP relay.",
        {"to": "Recipient address", "subject": "Subject line", "body": "Message body"},
        namespace="mailer",
        tags=("external", "mail"),
    ),
    tool(
        "create_issue",
        "Create a new issue in a GitHub repository",
        {"owner": "Repository owner", "repo": "Repository name", "title": "Issue title"},
        namespace="github",
    ),
    tool(
        "list_issues",
        "List issues in a GitHub repository, with filters by state and labels",
        {"owner": "Repository owner", "repo": "Repository name", "state": "open or closed"},
        namespace="github",
    ),
    tool(
        "getWeatherForecast",
        "Weather forecast for a city for the next days",
        {"city": "City name", "days": "Number of days"},
        namespace="weather",
        title="Weather forecast",
    ),
    tool("encrypt", "Encrypt a message with a public key", {"message": "Plain text"}),
]
INDEX = SearchIndex.build(CATALOG)


def names(hits: list[SearchHit]) -> list[str]:
    return [h.name for h in hits]


def top(query: str, k: int = 5) -> str:
    hits = INDEX.search(query, k)
    assert hits, f"no hits for {query!r}"
    return hits[0].name


def test_identifiers_split_on_camel_case_snake_case_dots_and_dashes() -> None:
    assert split_words("getUserName") == ["get", "user", "name"]
    assert split_words("get_user-name.v2") == ["get", "user", "name", "v2"]
    assert split_words("parseHTTPResponse") == ["parse", "http", "response"]
    assert split_words("base64Decode S3Bucket") == ["base64", "decode", "s3", "bucket"]
    assert split_words("mail.smtp_send") == ["mail", "smtp", "send"]


def test_stemming_matches_word_forms_and_stop_words_are_dropped() -> None:
    analyzer = default_analyzer()
    assert analyzer.terms("the running processes") == analyzer.terms("run process")
    assert analyzer.terms("Forecasts") == analyzer.terms("forecast")
    assert analyzer.terms("what is it") == []


def test_the_verbs_a_request_is_framed_with_are_not_its_content() -> None:
    analyzer = default_analyzer()
    framed = "Can you help me find a hotel? Please give me, tell me or show me some; suggest one"
    assert analyzer.terms(framed) == analyzer.terms("find hotel; one")
    assert analyzer.terms("recommend something, do you know any") == analyzer.terms("something")


def test_identifier_abbreviations_meet_their_full_words() -> None:
    analyzer = default_analyzer()
    assert analyzer.terms("getUserInfo") == analyzer.terms("get user information")
    assert analyzer.terms("list_repos db_stats") == analyzer.terms(
        "list repositories database statistics"
    )
    assert analyzer.terms("AppConfig") == analyzer.terms("application configuration")


def test_courtesies_are_not_part_of_the_request() -> None:
    assert strip_courtesies("I would like to know, thanks").split() == ["I", "would", "to", "know,"]
    assert strip_courtesies("I'd like that. Thank you!").split() == ["I'd", "that.", "!"]
    assert strip_courtesies("like the post I like") == "like the post I like"
    index = SearchIndex.build([*CATALOG, tool("like_post", "Like a post", {"post_id": "Post"})])
    found = names(index.search("I would like to count the words in this text. Thank you!", 3))
    assert found[0] == "word_count" and "like_post" not in found


def test_without_values_drops_quoted_literals_and_numbers_only() -> None:
    assert without_values("reverse the string 'Hello, World!' please").split() == [
        "reverse",
        "the",
        "string",
        "please",
    ]
    assert without_values("budget $200 from 2020-12-25, the 25th").split() == [
        "budget",
        "$",
        "from",
        "the",
    ]
    # apostrophes, and digits inside words, are not values
    assert without_values("I'm sure it's the user's base64 mp3") == (
        "I'm sure it's the user's base64 mp3"
    )
    assert without_values("say “good morning” to ‘Ann’").split() == ["say", "to"]


def test_the_kinds_of_value_a_request_gives_are_read() -> None:
    assert value_kinds("weather on 2024-12-25 or 12/26/2024") == ["date"]
    assert value_kinds("March 3rd at 3 pm") == ["date", "time"]
    assert value_kinds("the 3rd of March, 15:30") == ["date", "time"]
    assert value_kinds("mail bob@example.com the page https://example.com/a") == ["email", "url"]
    # a ratio, a count and a year are no date or time; no digit, @ or :// is no scan
    assert value_kinds("a 16:9 screen, 3 apples in 2024") == []
    assert value_kinds("what is the date today") == []


def test_a_request_that_gives_a_date_prefers_the_tool_that_takes_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    catalog = [
        tool("weather_current", "Current weather conditions in a city", {"city": "City name"}),
        tool(
            "weather_history",
            "Weather observations in a city for a past day",
            {"city": "City name", "date": "The day, YYYY-MM-DD"},
        ),
        tool("alarm_set", "Set an alarm", {"time": "Time of day, HH:MM"}),
    ]
    index = SearchIndex.build(catalog, semantic=False)
    asked = "What was the weather in Boston on 2023-04-02?"
    assert names(index.search(asked, 3)) == ["weather_history", "weather_current"]
    assert names(index.search("weather in Boston", 3)) == ["weather_current", "weather_history"]
    # the kind of value ranks, but is no evidence alone: no reminder tool here
    assert index.search("remind me on 2023-04-02 at 6:30", 3) == []
    monkeypatch.setattr(ranking_config, "VALUE_KIND_WEIGHT", 0.0)
    assert names(index.search(asked, 3)) == ["weather_current", "weather_history"]


def test_the_words_a_wish_is_framed_with_are_not_part_of_the_request() -> None:
    assert strip_courtesies("I'm interested in jazz, looking for a bar").split() == [
        "I'm",
        "in",
        "jazz,",
        "for",
        "a",
        "bar",
    ]
    # only in those phrases: "interest rate" and "look up" keep their words
    assert strip_courtesies("the interest rate; look up a word") == (
        "the interest rate; look up a word"
    )
    catalog = [
        tool("compound_interest", "Compound interest earned on a principal", {"rate": "Rate"}),
        tool("find_events", "Find music events and concerts in a city", {"city": "City"}),
    ]
    index = SearchIndex.build(catalog, semantic=False)
    assert names(index.search("I'm interested in attending a music event", 5)) == ["find_events"]
    assert names(index.search("compound interest at a 3% rate", 5))[0] == "compound_interest"


def test_a_full_stem_memo_still_analyzes_new_words_the_same_way() -> None:
    small = Analyzer(snowball_english(), max_memo=3)
    warm = default_analyzer()
    text = "the running processes forecasts getUserNames"
    assert small.terms(text) == small.terms(text) == warm.terms(text)
    assert warm.terms(text) == ["run", "process", "forecast", "get", "user", "name"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("what time is it in Helsinki", "get_time"),
        ("count the words in this text", "word_count"),
        ("download the page at https://example.com", "http_fetch"),
        ("translate this paragraph into French", "translate-text"),
        ("is this review positive or negative", "sentiment-analysis"),
        ("resize this image to 200 pixels wide", "resize-image"),
        ("send an email to the team", "mail_smtp_send"),
        ("open a new issue on github about the crash", "create_issue"),
        ("which issues are still open in our repo", "list_issues"),
        ("will it rain in Paris in the next days", "getWeatherForecast"),
        ("write the report to a file in the repository", "fs_write_file"),
        ("give me a short summary of this article", "summarize-text"),
    ],
)
def test_everyday_requests_find_the_tool_that_serves_them(query: str, expected: str) -> None:
    assert top(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "fs_read_file",
        "use fs_read_file to fetch the http url and download it",
        "goagent.fs_read_file please, to download a url",
        "goagent/fs_read_file",
        "call `fs_read_file` with https url",
    ],
)
def test_a_query_naming_a_tool_ranks_that_tool_first(query: str) -> None:
    assert top(query) == "fs_read_file"


def test_a_short_suffix_or_namespace_qualified_id_ranks_the_tool_first() -> None:
    assert top("smtp_send the issue list to github") == "mail_smtp_send"
    assert top("github.list_issues to create a new issue") == "list_issues"
    assert top("mail.smtp_send") == "mail_smtp_send"


def test_a_suffix_many_tools_share_or_a_quote_around_a_phrase_names_no_tool() -> None:
    # "get" ends many ids (stock.price.get, weather.forecast.get): it names none of them, and
    # a quote that opens a phrase ('Get stock ...') quotes no name; ranking decides.
    extra = [
        tool("stock.price.get", "Get the stock price of a company"),
        tool("weather.forecast.get", "Get the weather forecast of a city"),
        tool("museum.hours.get", "Get the opening hours of a museum"),
    ]
    index = SearchIndex.build([*CATALOG, *extra], semantic=False)
    query = "'Get the forecast for the weather in Paris.'"
    assert names(index.search(query, 2)) == ["getWeatherForecast", "weather_forecast_get"]
    assert index.search("'get' the museum hours", 1)[0].name == "museum_hours_get"
    # a suffix of one tool, quoted on both sides, still names it
    assert index.search("'price.get' for Apple", 1)[0].name == "stock_price_get"


def test_several_named_tools_come_first_in_the_order_they_are_named() -> None:
    assert names(INDEX.search("word_count then get_time", 3))[:2] == ["word_count", "get_time"]


def test_a_plain_word_that_is_a_tools_exact_name_ranks_it_first_even_in_prose() -> None:
    assert top("encrypt") == "encrypt"
    assert top("'encrypt' the weather forecast") == "encrypt"
    assert top("encrypt the weather forecast for the next days") == "encrypt"
    assert top("please get the weather forecast, then encrypt it") == "encrypt"


def test_in_prose_a_name_matches_case_sensitively_and_must_name_one_tool() -> None:
    extra = [
        tool("copyEditing", "Copy-edit a manuscript for style and grammar"),
        tool("github.search", "Search code on GitHub", namespace="github"),
        tool("sms.send", "Send an SMS text message", {"to": "Phone number"}, namespace="sms"),
        tool("chat.send", "Post a chat message to a channel", namespace="chat"),
    ]
    index = SearchIndex.build([*CATALOG, *extra])

    def first(query: str) -> str:
        return index.search(query, 3)[0].name

    # Tool names are case-sensitive: capitalised or run together, a prose word is just a word.
    assert first("Encrypt the weather forecast for the next days") == "getWeatherForecast"
    assert first("copyediting of the text") != "copyEditing"
    # Identifier-shaped, quoted or alone, a name is found whatever its case.
    assert first("please copyEditing this") == "copyEditing"
    assert first("GET_TIME please") == "get_time"
    assert first("ENCRYPT") == "encrypt"
    # A short suffix names its tool when written as a reference, not as a word of prose:
    # "search" is a request there, and ranking decides.
    assert first("`search` the weather forecast") == "github_search"
    assert first("search the weather forecast") == "getWeatherForecast"
    assert first("send the report by sms") == "sms_send"


def test_in_prose_a_plain_name_that_other_tools_use_as_a_word_names_nothing() -> None:
    extra = [
        tool("temperature", "Convert a temperature between Celsius and Fahrenheit"),
        tool("forecast_week", "Temperature and rain forecast for the next seven days"),
    ]
    index = SearchIndex.build([*CATALOG, *extra], semantic=False)
    # "temperature" is another tool's word too: not a reference, so ranking decides ...
    assert index.search("the temperature forecast for the next days", 1)[0].name != "temperature"
    # ... while written as a name, or alone, it names the tool.
    assert index.search("`temperature` for the next days", 1)[0].name == "temperature"
    assert index.search("temperature", 1)[0].name == "temperature"


def test_select_returns_exactly_the_named_tools_in_the_given_order() -> None:
    hits = INDEX.search("select:word_count,get_time, mail.smtp_send,nope,word_count", k=1)
    assert names(hits) == ["word_count", "get_time", "mail_smtp_send"]
    assert names(INDEX.search("SELECT: translate-text")) == ["translate-text"]


def test_hidden_tools_are_never_returned_even_when_named_or_selected() -> None:
    def visible(name: str) -> bool:
        return name not in {"get_time", "fs_read_file"}

    for query in ("what time is it in Helsinki", "get_time", "fs_read_file a file"):
        found = names(INDEX.search(query, 20, visible=visible))
        assert "get_time" not in found and "fs_read_file" not in found
    assert "fs_write_file" in names(INDEX.search("fs_read_file a file", visible=visible))
    assert names(INDEX.search("select:get_time,word_count", visible=visible)) == ["word_count"]


def test_hidden_tools_leave_room_for_the_next_visible_ones() -> None:
    every = names(INDEX.search("text", 3))
    hidden = set(every[:2])
    rest = names(INDEX.search("text", 3, visible=lambda n: n not in hidden))
    assert len(rest) == 3 and not hidden & set(rest)


def test_requests_are_split_into_clauses_at_sentence_ends_and_connectives() -> None:
    assert split_clauses("find X, then Y; also Z") == ["find X", "Y", "Z"]
    assert split_clauses("First, find X. Next, do Y, and in addition Z") == ["find X", "do Y", "Z"]
    assert split_clauses("Fix 'a glas of water.' Finally, upload it") == [
        "Fix 'a glas of water",
        "upload it",
    ]
    assert split_clauses("the forecast for next week, first aid kit") == [
        "the forecast for next week, first aid kit"
    ]
    assert split_clauses("Get the weather. Afterwards, book it and then send mail") == [
        "Get the weather",
        "book it",
        "send mail",
    ]
    assert split_clauses("search and replace in mail.send v1.5") == [
        "search and replace in mail.send v1.5"
    ]


def test_each_part_of_a_multi_part_request_gets_its_tool_near_the_top() -> None:
    query = (
        "Summarize the input text into a few sentences of text for the text report, "
        "then translate the text into French; also what time is it in Helsinki?"
    )
    found = names(INDEX.search(query, 3))
    assert set(found) == {"summarize-text", "translate-text", "get_time"}


def test_a_clause_restating_an_earlier_one_costs_no_slot() -> None:
    query = (
        "Translate this paragraph into French. It should be translated into French; "
        "also what time is it in Helsinki?"
    )
    assert set(names(INDEX.search(query, 2))) == {"translate-text", "get_time"}


MUSIC = [
    tool(
        "spotify.play_album",
        "Start playback of an album on the active device",
        {"album_id": "Album"},
        namespace="spotify",
    ),
    tool("spotify.queue_track", "Add a song to the playback queue", namespace="spotify"),
    tool("spotify.set_volume", "Set the player volume", namespace="spotify"),
    tool("radio.queue_status", "Show the request queue of a radio station", namespace="radio"),
    tool("radio.station_search", "Find radio stations by genre", namespace="radio"),
    tool("photos.album_create", "Create a photo album", {"title": "Title"}, namespace="photos"),
]


def test_tools_of_the_server_that_covers_the_whole_request_come_first() -> None:
    # Each word alone is matched as well by another server's tool; only spotify's tools
    # cover "queue" and "album" together, so both of its tools rise above the others. Sibling
    # evidence belongs to the lexical leg; in a six-tool catalog the semantic leg's own
    # preference (a song queue for "queue") would decide instead, so it is left out here.
    hits = names(SearchIndex.build(MUSIC, semantic=False).search("queue the album", 4))
    assert hits[:2] == ["spotify_play_album", "spotify_queue_track"]


def test_sibling_evidence_keeps_the_order_of_a_catalog_with_one_namespace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    one_server = [spec.model_copy(update={"namespace": "music"}) for spec in MUSIC]
    queries = ["queue the album", "play an album, then set the volume", "radio genre"]
    index = SearchIndex.build(one_server)
    mixed = [index.search(query, 6) for query in queries]
    monkeypatch.setattr(ranking_config, "SIBLING_WEIGHT", 0.0)
    assert [index.search(query, 6) for query in queries] == mixed


def test_scores_never_increase_down_the_list() -> None:
    for query in ("fs_read_file to download a url", "text then time; also weather"):
        scores = [h.score for h in INDEX.search(query, 10)]
        assert scores == sorted(scores, reverse=True)


def test_equal_scores_are_ordered_by_name_whatever_the_input_order() -> None:
    twins = [tool(n, "Ping a host and report latency") for n in ("zeta", "alpha", "mid")]
    shuffled = CATALOG + twins
    random.Random(5).shuffle(shuffled)
    for catalog in (CATALOG + twins, shuffled):
        # lexical ties (the semantic leg reads the names, so they differ there)
        hits = SearchIndex.build(catalog, semantic=False).search("ping host latency", 3)
        assert names(hits) == ["alpha", "mid", "zeta"]
        assert len({h.score for h in hits}) == 1


@pytest.mark.parametrize("walk_ratio", [0, 8, 10**9])
def test_pruned_scoring_returns_exactly_the_ranking_of_a_full_walk(
    monkeypatch: pytest.MonkeyPatch, walk_ratio: int
) -> None:
    monkeypatch.setattr(ranking_config, "EVIDENCE_MIN", 0.0)  # every scored tool, matched or not
    # the docs left after pruning get the other terms by binary search (0), by a walk over
    # each posting list (10**9), or by whichever is cheaper (8, shipped): the same scores
    monkeypatch.setattr(index_module, "_WALK_RATIO", walk_ratio)
    rng = random.Random(7)
    words = [f"w{i}" for i in range(300)]
    tools = [
        tool(f"t{i:04d}", " ".join(["record", *rng.sample(words, 5), "entry" * (i % 2)]))
        for i in range(1500)
    ]
    index = SearchIndex.build(tools, semantic=False)  # the lexical leg's exact scores
    analyzer = default_analyzer()
    hidden = {f"t{i:04d}" for i in range(1500) if i % 3}  # k=20 outruns the pool

    def shown(name: str) -> bool:
        return name not in hidden

    pruned = 0
    for query in ("record w1 w2", "entry record w5", "w7 record entry w9 w11", "record entry"):
        terms = analyzer.terms(query)
        full = sorted(index._scores(terms, None)[0].items(), key=lambda ds: (-ds[1], ds[0]))
        pruned += not index._scores(terms, 28)[1]
        for k in (1, 5, 20):
            expected = [(index._names[d], score) for d, score in full]
            got = [(h.name, h.score) for h in index.search(query, k)]
            assert got == expected[:k]
            got = [(h.name, h.score) for h in index.search(query, k, visible=shown)]
            assert got == [(n, s) for n, s in expected if n not in hidden][:k]
    assert pruned >= 2  # the test exercises the pruned path


def test_empty_queries_and_nonpositive_k_return_nothing() -> None:
    assert INDEX.search("   ") == []
    assert INDEX.search("the of and") == []
    assert INDEX.search("time", 0) == []
    assert INDEX.search("select:") == []
    assert len(SearchIndex.build([]).search("anything")) == 0


def test_a_query_with_no_evidence_finds_nothing_and_keeps_the_closest_names_as_a_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for query in ("zzqxunmatched", "qwxv blorptangle", "zzqx_42 v2", "book a table in Rome"):
        found = INDEX.find(query, 5)
        assert found.hits == [] and INDEX.search(query, 5) == []
        assert found.closest == []  # no word of it is anywhere (numbers are values): no hint
    assert INDEX.find("translate this text into French", 5).hits  # a real request still finds
    # A stricter cut than the shipped one (any shared word) turns weak matches into hints.
    monkeypatch.setattr(ranking_config, "EVIDENCE_MIN", 0.3)
    found = INDEX.find("format the invoice table as a spreadsheet with bold text", 5)
    assert found.hits == [] and "word_count" in found.closest


def test_a_tool_that_gives_what_the_first_choice_needs_follows_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ranking_config, "DEPENDENCIES", True)  # off as shipped (measured)
    catalog = [
        tool(
            "spotify.search_playlists",
            "Search the user's playlists by name",
            {"query": "Name"},
            namespace="spotify",
        ),
        tool(
            "spotify.add_to_playlist",
            "Add songs to a playlist",
            {"playlist_id": "The playlist", "uris": "Songs"},
            namespace="spotify",
        ),
        tool(
            "spotify.add_to_queue",
            "Add a song to the playback queue",
            {"uri": "Song"},
            namespace="spotify",
        ),
        tool(
            "spotify.add_to_library",
            "Add songs to the user's library",
            {"uris": "Songs"},
            namespace="spotify",
        ),
        tool(
            "spotify.add_favorite",
            "Add a song to favorite songs",
            {"uri": "Song"},
            namespace="spotify",
        ),
    ]
    for spec in catalog:
        if "playlist_id" in spec.input_schema["properties"]:
            spec.input_schema["required"] = ["playlist_id"]
    index = SearchIndex.build(catalog, semantic=False)
    hits = names(index.search("add the song Yellow to my chill playlist", 3))
    assert hits[:2] == ["spotify_add_to_playlist", "spotify_search_playlists"]


def test_covering_gives_each_clause_its_best_before_anyones_second() -> None:
    from mcp_toolbridge.catalog.merge import cover

    whole = [(10.0, 1), (9.0, 2), (6.0, 3)]
    # two strong clauses: 1 and 2 are near-duplicates for the first, 3 is the second's
    lists = [[(8.0, 1), (7.9, 2)], [(9.0, 3), (2.0, 1)]]
    assert [doc for _, doc in cover(whole, lists, 3)] == [3, 1, 2]
    # a tool second for each clause and first for the request ("the weather in Chennai?
    # Latitude 13.08 and longitude 80.27": the tool by coordinates) comes first; rank by
    # rank, it would come after each clause's own best
    both = [[(8.0, 1), (7.5, 5), (5.0, 6)], [(8.0, 3), (7.5, 5), (5.0, 7)]]
    assert cover([(10.0, 5), (8.0, 1), (7.0, 3)], both, 3)[0][1] == 5
    # a weak detail clause ("Format it as a ratio") does not put its tool first
    weak = [[(10.0, 1), (9.0, 2)], [(1.0, 4)]]
    assert [doc for _, doc in cover(whole, weak, 3)][:2] == [1, 2]
    scores = [score for score, _ in cover(whole, lists, 3)]
    assert scores == sorted(scores, reverse=True)


def test_the_request_as_a_whole_leads_before_its_detail_clauses() -> None:
    catalog = [
        tool("prime_factorize", "Prime factorization of a number"),
        tool("dict_format", "Format a result in the form of a dictionary"),
        tool("number_analysis", "Analyze a number: parity, digits, prime or not"),
    ]
    index = SearchIndex.build(catalog, semantic=False)
    query = "What is the prime factorization of the number 60? Return them as a dictionary"
    assert names(index.search(query, 3))[0] == "prime_factorize"
    assert split_clauses("criminal cases of Mr. X in Washington, D.C. in 2015") == [
        "criminal cases of Mr. X in Washington, D.C. in 2015"
    ]


def test_given_strengths_weigh_clauses_whatever_their_lists_scores() -> None:
    from mcp_toolbridge.catalog.merge import cover

    # fused lists: z-scores, the same size at the top of a strong and a context clause
    whole = [(3.0, 1), (2.9, 2), (2.0, 4)]
    lists = [[(3.0, 1), (2.9, 2)], [(3.0, 4), (1.0, 2)]]
    assert [doc for _, doc in cover(whole, lists, 3)][:2] == [1, 4]
    # the context clause's keyword score was a tenth of the request's: its tool waits
    assert [doc for _, doc in cover(whole, lists, 3, [1.0, 0.1])][:2] == [1, 2]


def test_contractions_leave_no_stray_words() -> None:
    assert split_words("I'm sure we've got it, don’t you? I'll see; they're here") == [
        "i",
        "sure",
        "we",
        "got",
        "it",
        "you",
        "i",
        "see",
        "they",
        "here",
    ]
    # a quoted one-letter name is not a contraction
    assert "m" in split_words("call 'm' now")
    catalog = [
        tool("free_fall_speed", "Final speed of a falling object", {"unit": "m or ft"}),
        tool("find_events", "Find music events and concerts in a city"),
    ]
    index = SearchIndex.build(catalog, semantic=False)
    # "I'm" once left the word "m", metres in the physics tool's text
    assert names(index.search("I'm in Chicago and I'm looking for a music event", 5)) == [
        "find_events"
    ]
