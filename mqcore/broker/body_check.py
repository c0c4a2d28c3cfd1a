"""Refuse a single-message body flagged compressed that does not inflate.

A producer may set the compressed sysflag (``0x1``) on any body; RocketMQ stores it as
sent, and every consumer then fails on the record (ours used to skip the messages after
it). Checking at send time turns a poison message into a clear MESSAGE_ILLEGAL answer to
the one client that sent it. The check inflates in bounded steps, so a body that
inflates to more than ``max_inflated`` bytes (a zip bomb) is refused without ever
holding that much memory; bodies in codecs RocketMQ 4.x does not write (LZ4, ZSTD type
bits of 5.x) are left to the consumers that read them.
"""

from __future__ import annotations

import zlib

from mqcore.message.const import SysFlag

__all__ = ["compressed_body_problem"]

_STEP = 256 * 1024


def compressed_body_problem(
    body: bytes | bytearray | memoryview, sys_flag: int, *, max_inflated: int
) -> str | None:
    """Why ``body`` cannot be stored with ``sys_flag``, or None when it can (not flagged
    compressed, a 5.x codec, or a complete zlib stream of at most ``max_inflated``)."""
    if not sys_flag & SysFlag.COMPRESSED_FLAG:
        return None
    kind = sys_flag & SysFlag.COMPRESSION_TYPE_MASK
    if kind not in (0, SysFlag.COMPRESSION_ZLIB):
        return None
    flagged = f"the body is flagged compressed (sysFlag {sys_flag:#x})"
    inflater = zlib.decompressobj()
    pending = bytes(body)
    size = 0
    try:
        while pending:
            size += len(inflater.decompress(pending, _STEP))
            if size > max_inflated:
                return f"the compressed body inflates to more than {max_inflated} bytes"
            pending = inflater.unconsumed_tail
            if inflater.eof:
                break
        size += len(inflater.flush())
    except zlib.error as exc:
        return f"{flagged} but does not inflate: {exc}"
    if not inflater.eof:
        return f"{flagged} but its zlib stream is cut short"
    if size > max_inflated:
        return f"the compressed body inflates to more than {max_inflated} bytes"
    return None
