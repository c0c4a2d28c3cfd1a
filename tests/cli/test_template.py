"""`-f` templates: every field, escapes, charsets and the errors for unknown fields."""

from __future__ import annotations

import pytest

from mqcli.template import FIELDS, TemplateError, compile_template
from mqcore.message import MessageExt


def _msg() -> MessageExt:
    msg = MessageExt(
        "Orders",
        "héllo".encode(),
        queue_id=3,
        queue_offset=17,
        store_timestamp=1_767_348_000_123,
        store_host=("127.0.0.1", 10911),
        commit_log_offset=4096,
        reconsume_times=2,
    )
    msg.tags = "paid"
    msg.keys = ["o-1", "c-9"]
    msg.unique_key = "ABCDEF"
    msg.properties["region"] = "eu"
    return msg


def test_every_field() -> None:
    msg = _msg()
    out = compile_template("%t|%k|%T|%b|%l|%o|%q|%B|%u|%s|%r|%p|%%").render(msg, broker="b-a")
    assert out == "Orders|o-1 c-9|paid|héllo|6|17|3|b-a|ABCDEF|1767348000123|2|region=eu|%"
    assert compile_template("%i").render(msg) == msg.msg_id
    assert "TAGS=paid" in compile_template("%P").render(msg)
    assert compile_template("%d").render(msg).startswith("2026-01-0")
    assert set(FIELDS) >= set("tkTboqiuspl")


def test_escapes_and_literals() -> None:
    tmpl = compile_template(r"a\tb\n\\%t\r")
    assert tmpl.render(_msg()) == "a\tb\n\\Orders\r"
    assert compile_template("plain").render(_msg()) == "plain"
    assert compile_template(r"\q").render(_msg()) == r"\q"  # unknown escapes stay as typed


def test_charset_and_undecodable_bodies() -> None:
    msg = _msg()
    msg.body = "中文".encode("gbk")
    assert compile_template("%b").render(msg, charset="gbk") == "中文"
    assert "\ufffd" in compile_template("%b").render(msg)


@pytest.mark.parametrize(("source", "needle"), [("%x", "%x at column 1"), ("ab%", "lone %")])
def test_unknown_fields(source: str, needle: str) -> None:
    with pytest.raises(TemplateError, match=needle):
        compile_template(source)
