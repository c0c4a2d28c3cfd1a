"""broker.conf: any text parses to a map, and any values for the known keys give a config
or ConfigError, for the broker, store and name server classes alike."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from fuzzing import fuzz
from hypothesis import given
from hypothesis import strategies as st

from mqcore.broker.config import BrokerConfig
from mqcore.common.properties import PropertiesConfig, parse_properties
from mqcore.errors import ConfigError
from mqcore.namesrv.config import NamesrvConfig
from mqcore.store.store_config import MessageStoreConfig

CLASSES: list[type[PropertiesConfig]] = [BrokerConfig, MessageStoreConfig, NamesrvConfig]
KEYS = sorted({key for cls in CLASSES for key in cls.property_fields()})
VALUES = st.one_of(
    st.sampled_from(
        ["", "0", "-1", "true", "FALSE", "1.5", "nan", "inf", "1e999", "9" * 5000, "²", "٣",
         "04;05", "24", "0x10", "1_000", "SYNC_MASTER", "ASYNC_FLUSH", "1s 5s", "1x", " 7 "]
    ),
    st.integers().map(str),
    st.text(max_size=12),
)  # fmt: skip


@fuzz(80)
@given(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=6), st.sampled_from(CLASSES))
def test_known_keys_with_any_values(props: dict[str, str], cls: type[PropertiesConfig]) -> None:
    try:
        config = cls.from_properties(props)
    except ConfigError:
        return
    again = cls.from_properties(config.to_properties())  # what -p prints reads back
    assert again.to_properties() == config.to_properties()


LINES = st.lists(
    st.one_of(
        st.builds(lambda k, sep, v: f"{k}{sep}{v}", st.sampled_from(KEYS),
                  st.sampled_from(["=", ":", " ", " = ", "\t"]), VALUES),
        st.sampled_from(["#c", "!c", "\\", "a\\", "=", ":x", "  ", "\r", "\x0b", "\u2028"]),
        st.text(max_size=20),
    ),
    max_size=12,
).map("\n".join)  # fmt: skip


@fuzz(80)
@given(LINES)
def test_any_properties_text(text: str) -> None:
    props = parse_properties(text)
    assert all(type(k) is str and type(v) is str and k for k, v in props.items())
    for cls in CLASSES:
        try:
            cls.from_properties(props)
        except ConfigError:
            pass


@fuzz(30)
@given(st.binary(max_size=200))
def test_any_bytes_as_a_config_file(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "broker.conf"
        path.write_bytes(data)
        try:
            MessageStoreConfig.from_properties(path)
        except ConfigError:
            pass


def test_a_config_file_that_is_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    """Found by bench/fuzz_atheris.py: UnicodeDecodeError came out of from_properties (a
    traceback from ``mq broker -c``) for a file saved in Latin-1."""
    path = tmp_path / "broker.conf"
    path.write_bytes(b"brokerName=caf\xe9\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        MessageStoreConfig.from_properties(path)
