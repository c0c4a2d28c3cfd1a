"""Address patterns of plain_acl.yml, in the forms 4.9.8 accepts."""

from __future__ import annotations

import pytest

from mqcore.acl.address import AddressPattern
from mqcore.errors import ConfigError


@pytest.mark.parametrize(
    ("pattern", "host", "expected"),
    [
        ("*", "10.1.2.3", True),
        ("*.*.*.*", "::1", True),
        ("", "127.0.0.1", False),
        (None, "127.0.0.1", False),
        ("127.0.0.1", "127.0.0.1", True),
        ("127.0.0.1", "127.0.0.2", False),
        ("192.168.0.{1,2}", "192.168.0.2", True),
        ("192.168.0.{1,2}", "192.168.0.3", False),
        ("10.0.0.1,10.0.0.7", "10.0.0.7", True),
        ("10.0.0.1,10.0.0.7", "10.0.0.5", False),
        ("192.168.1.1-100", "192.168.1.100", True),
        ("192.168.1.1-100", "192.168.1.101", False),
        ("192.168.1.1-100", "192.168.2.50", False),
        ("10.10.103.*", "10.10.103.254", True),
        ("10.10.103.*", "10.10.104.1", False),
        ("10.10.*.*", "10.10.7.9", True),
        ("10.1-5.*.*", "10.3.0.1", True),
        ("10.1-5.*.*", "10.6.0.1", False),
        ("10.10.103.*", "::1", False),
        ("::1", "0:0:0:0:0:0:0:1", True),
        ("1050:0:0:0:5:600:300c:326b", "1050::5:600:300c:326b", True),
        ("1050::5:600:300c:1-ff", "1050:0:0:0:5:600:300c:80", True),
        ("1050::5:600:300c:1-ff", "1050:0:0:0:5:600:300c:100", False),
        ("1050:0:0:0:5:600:300c:*", "1050::5:600:300c:abcd", True),
        ("1050:0:0:0:5:600:300c:*", "1051::5:600:300c:abcd", False),
        ("2::ac5:78:1-200:*", "2::ac5:78:150:9", True),
        ("2::ac5:78:1-200:*", "2::ac5:78:201:9", False),
        ("::1", "::ffff:127.0.0.1", False),
        ("127.0.0.1", "::ffff:127.0.0.1", True),
    ],
)
def test_pattern_matches_as_4_9_8(pattern: str | None, host: str, expected: bool) -> None:
    assert AddressPattern.parse(pattern).matches(host) is expected


@pytest.mark.parametrize(
    "pattern",
    ["not-an-ip", "192.168.1", "192.168.0.{1,x}", "10.1.1.300-301", "*.1.1.1", "1.2.3.9-2"],
)
def test_bad_patterns_are_refused(pattern: str) -> None:
    with pytest.raises(ConfigError):
        AddressPattern.parse(pattern)
