"""What web_fetch makes of a response body: its kind, its text, HTML as Markdown or plain text.

- **Kind.** ``html`` for text/html and application/xhtml+xml; ``text`` for text/*, JSON, XML,
  YAML, JavaScript, SVG and the like (returned raw whatever the requested format); ``binary``
  for any other declared type. A missing or generic (application/octet-stream) type is sniffed:
  a NUL byte or undecodable bytes make it binary, a leading ``<!doctype html`` or ``<html``
  makes it HTML, anything else is text.
- **Charset.** The Content-Type ``charset``, else (HTML) a ``<meta charset>`` in the first
  4 KB, else UTF-8 (a BOM wins over all); undecodable bytes become U+FFFD.
- **HTML.** Parsed with BeautifulSoup's html.parser; script, style, noscript, iframe, template,
  object, embed and svg are dropped with their content; the title is returned separately. The
  rest goes through markdownify (ATX headings, ``-`` bullets), or to text (one line per block,
  blank runs collapsed); a page nested too deeply for markdownify's recursion comes back as
  text, with a note. ``html`` returns the decoded document as it came.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # both are imported on first use: they cost every server 0.07 s of start-up
    from bs4 import BeautifulSoup

Kind = Literal["html", "text", "binary"]
OutputFormat = Literal["markdown", "text", "html"]

DROPPED_TAGS = ("script", "style", "noscript", "iframe", "template", "object", "embed", "svg")
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/ld+json",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/x-ndjson",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/sql",
        "application/graphql",
        "application/x-sh",
        "application/x-httpd-php",
        "image/svg+xml",
    }
)
_GENERIC_TYPES = frozenset({"", "application/octet-stream", "binary/octet-stream"})
_SNIFF_BYTES = 8192
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_XML_DECLARATION = re.compile(r"<\?xml[^>]*>", re.I)
_BLANK_RUNS = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")


@dataclass(frozen=True, slots=True)
class Extracted:
    text: str
    title: str | None = None
    note: str | None = None


def media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def classify(content_type: str, body: bytes) -> Kind:
    """The kind of a body from its Content-Type, sniffing generic or missing types."""
    mime = media_type(content_type)
    if mime in _HTML_TYPES:
        return "html"
    if mime.startswith("text/") or mime in _TEXT_TYPES or mime.endswith(("+json", "+xml")):
        return "text"
    if mime not in _GENERIC_TYPES:
        return "binary"
    probe = body[:_SNIFF_BYTES]
    if b"\x00" in probe or _mostly_undecodable(probe):
        return "binary"
    start = probe.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return "html" if start.startswith((b"<!doctype html", b"<html")) else "text"


def decode(body: bytes, content_type: str, *, html: bool) -> str:
    """The body as text (see the module doc for how the charset is chosen)."""
    for bom, name in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16")):
        if body.startswith(bom):
            return body.decode(name, errors="replace").lstrip("\ufeff")
    charset = _charset_param(content_type)
    if charset is None and html:
        found = _META_CHARSET.search(body[:4096])
        charset = found.group(1).decode("ascii") if found else None
    return body.decode(_known_codec(charset) or "utf-8", errors="replace")


def extract(body: bytes, content_type: str, kind: Kind, fmt: OutputFormat) -> Extracted:
    """The text web_fetch returns for a non-binary body (CPU-bound: run it in a thread)."""
    text = decode(body, content_type, html=kind == "html")
    if kind != "html" or fmt == "html":
        return Extracted(text)
    return html_to_markdown(text) if fmt == "markdown" else html_to_text(text)


def html_to_markdown(html: str) -> Extracted:
    soup, title = _clean_soup(html)
    if soup is None:
        return Extracted(_tidy(html))
    from markdownify import MarkdownConverter

    try:
        markdown = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    except RecursionError:  # markdownify recurses per element; a hostile page can nest deeply
        return Extracted(
            _soup_text(soup),
            title,
            note="the page is nested too deeply to convert to Markdown; returned as plain text",
        )
    return Extracted(_tidy(str(markdown)), title)


def html_to_text(html: str) -> Extracted:
    soup, title = _clean_soup(html)
    if soup is None:
        return Extracted(_tidy(html))
    return Extracted(_soup_text(soup), title)


def _soup_text(soup: BeautifulSoup) -> str:
    lines = (_SPACES.sub(" ", line).strip() for line in soup.get_text("\n").splitlines())
    return _tidy("\n".join(lines))


def _clean_soup(html: str) -> tuple[BeautifulSoup | None, str | None]:
    """The parsed document without dropped tags, and its title; None when there is no markup
    (BeautifulSoup would warn about text that looks like a file name or URL)."""
    if "<" not in html:
        return None, None
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(_XML_DECLARATION.sub("", html), "html.parser")
    title_tag = soup.find("title")
    title = _SPACES.sub(" ", title_tag.get_text()).strip() if title_tag is not None else ""
    for tag in soup.find_all(["title", *DROPPED_TAGS]):
        tag.decompose()
    return soup, title or None


def _tidy(text: str) -> str:
    return _BLANK_RUNS.sub("\n\n", text.replace("\r\n", "\n")).strip()


def _charset_param(content_type: str) -> str | None:
    for param in content_type.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            return value.strip().strip("\"'") or None
    return None


def _known_codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _mostly_undecodable(probe: bytes) -> bool:
    text = probe.decode("utf-8", errors="replace")
    # A cut multi-byte sequence at the end of the probe is not evidence of binary data.
    return text[:-1].count("\ufffd") > max(8, len(text) // 100)
