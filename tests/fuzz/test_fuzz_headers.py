"""Typed custom headers: any extFields map gives a header or HeaderError, for every header
class (the text values arrive from either header form)."""

from __future__ import annotations

from fuzzing import fuzz
from hypothesis import given
from hypothesis import strategies as st

from mqcore.protocol import headers
from mqcore.protocol.headers import CommandHeader, HeaderError

HEADER_CLASSES: list[type[CommandHeader]] = sorted(
    (
        cls
        for name in headers.__all__
        if isinstance(cls := getattr(headers, name), type)
        and issubclass(cls, CommandHeader)
        and cls is not CommandHeader
    ),
    key=lambda cls: cls.__name__,
)
WIRE_KEYS = sorted({key for cls in HEADER_CLASSES for _, key, *_ in cls._fields_spec()})
TEXTS = st.one_of(
    st.sampled_from(
        ["", "0", "-1", "true", "True", "2147483648", "-2147483649", "9223372036854775808",
         "1" * 5000, "٣", "1_0", " 5", "0x10", "1.0", "null"]
    ),
    st.integers(-(2**70), 2**70).map(str),
    st.text(max_size=8),
)  # fmt: skip


@fuzz(300)
@given(st.sampled_from(HEADER_CLASSES), st.dictionaries(st.sampled_from(WIRE_KEYS), TEXTS))
def test_any_ext_fields(cls: type[CommandHeader], ext: dict[str, str]) -> None:
    try:
        header = cls.from_ext_fields(ext)
    except HeaderError:
        return
    assert cls.from_ext_fields(header.to_ext_fields()) == header  # writes back what it read
