"""Tokenizer for RocketMQ 4.9.8's selector language (the token rules of SelectorParser.jj).

* whitespace: space, tab, CR, LF, form feed (nothing else);
* comments: ``/* ... */`` and ``-- ...`` *terminated by a line break* (without one,
  ``--`` is two minus signs, as in RocketMQ);
* keywords, case-insensitive: NOT AND OR BETWEEN IN TRUE FALSE NULL IS;
* identifiers ``[A-Za-z_$][A-Za-z0-9_$]*`` (ASCII; case kept for the property lookup);
* integers ``0 | [1-9][0-9]*[lL]?`` (so ``007`` is three tokens), decimals
  ``1.5``, ``1.``, ``.5``, ``1e3``, ``1.5E-3``; strings ``'...'`` with ``''`` for a quote;
* operators ``= <> > >= < <= ( ) , + -``.

Errors raise :class:`FilterSyntaxError` with the offending offset.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mqcore.errors import FilterSyntaxError

__all__ = ["KEYWORDS", "Token", "syntax_error", "tokenize"]

KEYWORDS = frozenset({"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS"})

# Token kinds besides keywords (the upper-cased keyword is its own kind) and operators.
ID, INT, FLOAT, STRING, EOF = "ID", "INT", "FLOAT", "STRING", "EOF"

_WHITESPACE = " \t\n\r\f"
_ID = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_INT = re.compile(r"0|[1-9][0-9]*[lL]?")
_FLOAT = re.compile(r"(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+")
_STRING = re.compile(r"'(?:''|[^'])*'")
_LINE_COMMENT = re.compile(r"--[^\n\r]*(?:\r\n|\n|\r)")
_OPERATORS = ("<>", ">=", "<=", "=", ">", "<", "(", ")", ",", "+", "-")


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # ID, INT, FLOAT, STRING, EOF, a keyword, or the operator text
    text: str  # source text (for STRING: the decoded value)
    pos: int


def syntax_error(expression: str, pos: int, message: str) -> FilterSyntaxError:
    """A FilterSyntaxError whose message shows the source line with a caret under ``pos``."""
    pos = max(0, min(pos, len(expression)))
    line_start = max(expression.rfind("\n", 0, pos), expression.rfind("\r", 0, pos)) + 1
    line_end = len(expression)
    for brk in ("\n", "\r"):
        found = expression.find(brk, pos)
        if found != -1:
            line_end = min(line_end, found)
    line = expression[line_start:line_end]
    column = pos - line_start
    # Keep the caret under the character: tabs stay tabs, other characters become spaces.
    pad = "".join("\t" if ch == "\t" else " " for ch in line[:column])
    where = f"column {column + 1}"
    if line_start:
        where = f"line {expression.count(chr(10), 0, pos) + 1}, {where}"
    if len(line) > 200:  # keep the message readable for huge inputs
        cut = max(0, column - 80)
        line, pad = line[cut : cut + 160], pad[cut:]
    text = f"invalid SQL92 expression: {message} at {where}\n{line}\n{pad}^"
    return FilterSyntaxError(text, expression=expression, position=pos)


def tokenize(expression: str) -> list[Token]:
    """All tokens of ``expression``, ending with an EOF token."""
    tokens: list[Token] = []
    pos, end = 0, len(expression)
    while True:
        while pos < end:
            ch = expression[pos]
            if ch in _WHITESPACE:
                pos += 1
            elif expression.startswith("/*", pos):
                close = expression.find("*/", pos + 2)
                if close == -1:
                    raise syntax_error(expression, pos, "unterminated comment")
                pos = close + 2
            elif ch == "-" and (m := _LINE_COMMENT.match(expression, pos)) is not None:
                pos = m.end()
            else:
                break
        if pos >= end:
            tokens.append(Token(EOF, "", end))
            return tokens
        ch = expression[pos]
        if ch.isascii() and (ch.isalpha() or ch in "_$"):
            m = _ID.match(expression, pos)
            assert m is not None
            word = m.group()
            upper = word.upper()
            tokens.append(Token(upper if upper in KEYWORDS else ID, word, pos))
            pos = m.end()
        elif ch.isascii() and (ch.isdigit() or ch == "."):
            fm = _FLOAT.match(expression, pos)
            im = _INT.match(expression, pos)
            if fm is not None and (im is None or fm.end() > im.end()):
                tokens.append(Token(FLOAT, fm.group(), pos))
                pos = fm.end()
            elif im is not None:
                tokens.append(Token(INT, im.group(), pos))
                pos = im.end()
            else:
                raise syntax_error(expression, pos, "'.' must be followed by a digit")
        elif ch == "'":
            m = _STRING.match(expression, pos)
            if m is None:
                raise syntax_error(expression, pos, "unterminated string literal")
            tokens.append(Token(STRING, m.group()[1:-1].replace("''", "'"), pos))
            pos = m.end()
        else:
            for op in _OPERATORS:
                if expression.startswith(op, pos):
                    tokens.append(Token(op, op, pos))
                    pos += len(op)
                    break
            else:
                hint = " (use '<>' for not-equal)" if expression.startswith("!=", pos) else ""
                raise syntax_error(expression, pos, f"unexpected character {ch!r}{hint}")
