from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_toolbridge.builtins.web.netguard import (
    HostRefused,
    NetPolicy,
    check_url_text,
    normalize_name,
    parse_ip_literal,
)

STRICT = NetPolicy()
LOOPBACK_OK = NetPolicy(allow_loopback=True)


@pytest.mark.parametrize(
    ("spelling", "address"),
    [
        ("127.1", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("10.1", "10.0.0.1"),
        ("0xa9fea9fe", "169.254.169.254"),
        ("169.254.43518", "169.254.169.254"),
        ("127.0.0.1.", "127.0.0.1"),
        ("[::1]", "::1"),
        ("0:0:0:0:0:0:0:1", "::1"),
        ("::ffff:127.0.0.1", "::ffff:7f00:1"),
    ],
)
def test_ip_literals_are_recognised_in_every_legacy_spelling(spelling: str, address: str) -> None:
    assert parse_ip_literal(spelling) == ipaddress.ip_address(address)


@pytest.mark.parametrize("name", ["example.com", "xn--bcher-kva.de", "a-b_c.example", "1x.io"])
def test_ordinary_names_are_not_taken_for_addresses(name: str) -> None:
    assert parse_ip_literal(name) is None
    assert STRICT.check_host(name) is None


@pytest.mark.parametrize(
    "host", ["4294967296", "1.2.3.256", "1.2.3.4.5", "example.08", "1.0x1000000"]
)
def test_numeric_hosts_that_are_not_valid_ipv4_are_refused_not_looked_up(host: str) -> None:
    with pytest.raises(HostRefused):
        STRICT.check_host(host)


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "127.1",
        "0x7f000001",
        "2130706433",
        "017700000001",
        "[::1]",
        "0:0:0:0:0:0:0:1",
        "::ffff:127.0.0.1",
        "::ffff:7f00:1",
        "::127.0.0.1",
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "100.64.0.1",
        "169.254.169.254",
        "fe80::1",
        "fc00::1",
        "fd12:3456::1",
        "0.0.0.0",
        "::",
        "224.0.0.1",
        "ff02::1",
        "255.255.255.255",
        "192.0.2.1",
        "2002:7f00:1::1",
        "2002:808:808::1",
        "64:ff9b::7f00:1",
        "64:ff9b::808:808",
        "64:ff9b:1::1",
        "2001:0:4136:e378::1",
        "2001:db8::1",
        "::ffff:8.8.8.8",
        "fe80::1%eth0",
        "fec0::1",  # site-local: deprecated, Python calls it global (red-team pass, 4th)
        "[fec0::1]",
    ],
)
def test_non_global_addresses_and_ipv4_embeddings_are_refused(host: str) -> None:
    with pytest.raises(HostRefused):
        STRICT.check_host(host)


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700::1111"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert STRICT.check_address(address) == ipaddress.ip_address(address)


@pytest.mark.parametrize("address", ["127.0.0.1", "127.8.9.10", "::1"])
def test_the_test_only_setting_allows_loopback(address: str) -> None:
    assert LOOPBACK_OK.check_address(address) == ipaddress.ip_address(address)
    with pytest.raises(HostRefused, match="loopback"):
        STRICT.check_address(address)


@pytest.mark.parametrize(
    "address", ["10.0.0.1", "169.254.169.254", "192.168.0.1", "::ffff:127.0.0.1", "fe80::1"]
)
def test_the_test_only_setting_still_refuses_private_link_local_and_mapped(address: str) -> None:
    with pytest.raises(HostRefused):
        LOOPBACK_OK.check_address(address)


def test_metadata_address_is_described_as_link_local() -> None:
    with pytest.raises(HostRefused, match="link-local"):
        STRICT.check_address("169.254.169.254")


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "LOCALHOST",
        "localhost.",
        "app.localhost",
        "metadata.google.internal",
        "db.internal",
        "printer.local",
        "box.localdomain",
        "router.home.arpa",
    ],
)
def test_local_and_internal_names_are_refused_before_any_lookup(host: str) -> None:
    with pytest.raises(HostRefused, match="local or internal"):
        STRICT.check_host(host)


def test_loopback_setting_lets_localhost_names_through_to_the_address_check() -> None:
    assert LOOPBACK_OK.check_host("localhost.") is None
    with pytest.raises(HostRefused):
        LOOPBACK_OK.check_host("db.internal")


@pytest.mark.parametrize("host", ["a..b", "a%2eb.com", "exa mple.com", "-a.com", "a\x00.b.com", ""])
def test_malformed_names_are_refused(host: str) -> None:
    with pytest.raises(HostRefused):
        normalize_name(host)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "only http"),
        ("ftp://example.com/x", "only http"),
        ("gopher://example.com:70/_x", "only http"),
        ("javascript:alert(1)", "only http"),
        ("example.com/page", "only http"),
        ("http://user:pw@example.com/", "credentials"),
        ("http://example.com@evil.example/", "credentials"),
        ("http://evil.example\\@example.com/", "credentials"),
        ("http://evil.example\\.example.com/", "backslash"),
        ("http://exa\x00mple.com/", "control character"),
        ("http://example.com/a\nb", "control character"),
    ],
)
def test_url_text_checks_refuse_schemes_credentials_and_odd_characters(
    url: str, reason: str
) -> None:
    with pytest.raises(HostRefused, match=reason):
        check_url_text(url)


def test_url_text_check_accepts_at_signs_after_the_authority() -> None:
    check_url_text("https://example.com/users/@me?x=a@b#c@d")


_PRIVATE_V4 = st.one_of(
    st.integers(0x7F000000, 0x7FFFFFFF),  # 127/8
    st.integers(0x0A000000, 0x0AFFFFFF),  # 10/8
    st.integers(0xA9FE0000, 0xA9FEFFFF),  # 169.254/16
    st.integers(0xC0A80000, 0xC0A8FFFF),  # 192.168/16
)


@given(_PRIVATE_V4, st.sampled_from(["dec", "hex", "oct", "two", "dotted-hex"]))
def test_any_spelling_of_a_private_ipv4_address_is_refused(number: int, style: str) -> None:
    octets = number.to_bytes(4, "big")
    spelling = {
        "dec": str(number),
        "hex": hex(number),
        "oct": "0" + format(number, "o"),
        "two": f"{octets[0]}.{number & 0xFFFFFF}",
        "dotted-hex": ".".join(hex(octet) for octet in octets),
    }[style]
    assert parse_ip_literal(spelling) == ipaddress.IPv4Address(number)
    with pytest.raises(HostRefused):
        STRICT.check_host(spelling)
    mapped = f"::ffff:{ipaddress.IPv4Address(number)}"
    with pytest.raises(HostRefused):
        LOOPBACK_OK.check_host(mapped)
