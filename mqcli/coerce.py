"""Command-line values of plain types converted without pydantic.

typer converts every option value through a pydantic ``TypeAdapter``; importing pydantic
and building the adapters costs more CPU than the rest of a short command (`mq produce
-t T --body x`). Text, integers, floats, booleans and choices, which are nearly all of
mq's options, are converted here the way those adapters do, with the same error
messages; anything else (paths, dates, lists, custom parsers) still goes to typer, but
only when a value is there to convert (typer builds every parameter's adapter, even for
an option left unset). :func:`install` patches typer's parameter class once, before the
app is built.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from enum import Enum
from typing import Any, get_args, get_origin

from typer._click.exceptions import BadParameter  # typer vendors click from 0.2x on
from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param
from typer._typing import is_literal_type, literal_values
from typer.core import _TyperParameter
from typer.models import ParameterInfo

__all__ = ["install", "plain_runtime_param", "runtime_param"]

_INT = re.compile(r"[+-]?\d+(?:_\d+)*(?:\.0*)?", re.ASCII)
_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no", ""})

_installed = False


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode(sys.getfilesystemencoding(), "replace")
    return str(value)


def _int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = _text(value).strip()
    if not _INT.fullmatch(text):
        raise ValueError("Input should be a valid integer, unable to parse string as an integer")
    return int(text.partition(".")[0])


def _float(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = _text(value).strip()
    try:
        if not text.isascii():
            raise ValueError
        return float(text)
    except ValueError:
        raise ValueError(
            "Input should be a valid number, unable to parse string as a number"
        ) from None


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = _text(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError("Input should be a valid boolean, unable to interpret input")


_CONVERT = {str: _text, int: _int, float: _float, bool: _bool}


@dataclass(frozen=True)
class _PlainRuntimeParam(RuntimeParam):
    """A value of one of :data:`_CONVERT`'s types, optionally a range or a choice."""

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        try:
            return self._one(value, ctx)
        except ValueError as exc:
            raise BadParameter(str(exc), ctx=ctx, param=param) from None

    def _one(self, value: Any, ctx: Any) -> Any:
        if self.choices is not None:
            return self._choice(value, ctx)
        return self._ranged(_CONVERT[self.annotation](value))

    @property
    def choices(self) -> tuple[Any, ...] | None:
        if isinstance(self.annotation, type) and issubclass(self.annotation, Enum):
            return tuple(self.annotation)
        if is_literal_type(self.annotation):
            return tuple(literal_values(self.annotation))
        return None

    def _choice(self, value: Any, ctx: Any) -> Any:
        from typer._param_types import coerce_cli_choice

        choices = self.choices or ()
        case_sensitive = self.parameter_info.case_sensitive
        try:
            return coerce_cli_choice(value, choices=choices, case_sensitive=case_sensitive, ctx=ctx)
        except ValueError as exc:
            raise ValueError(f"Value error, {exc}") from None

    def _ranged(self, number: Any) -> Any:
        info = self.parameter_info
        low, high = info.min, info.max
        if info.clamp:
            if low is not None and number < low:
                return self.annotation(low)
            if high is not None and number > high:
                return self.annotation(high)
            return number
        if low is not None and number < low:
            raise ValueError(f"Input should be greater than or equal to {low}")
        if high is not None and number > high:
            raise ValueError(f"Input should be less than or equal to {high}")
        return number


@dataclass(frozen=True)
class _PlainListRuntimeParam(RuntimeParam):
    """A repeated option (``list[X]``) whose items are plain."""

    item: _PlainRuntimeParam

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        items = value if isinstance(value, (list, tuple)) else [value]
        try:
            return [self.item._one(v, ctx) for v in items]
        except ValueError as exc:
            raise BadParameter(str(exc), ctx=ctx, param=param) from None


@dataclass(frozen=True)
class _DeferredRuntimeParam(RuntimeParam):
    """typer's own conversion, built when a value comes (unset options never need it)."""

    descriptor: TypeDescriptor

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        runtime = build_runtime_param(self.descriptor)
        return runtime._coerce_value(value, param=param, ctx=ctx)


def plain_runtime_param(descriptor: TypeDescriptor) -> RuntimeParam | None:
    """The pydantic-free conversion of ``descriptor``, or None when typer must do it."""
    info: ParameterInfo = descriptor.parameter_info
    annotation: Any = descriptor.annotation
    if descriptor.file_annotation is not None or info.parser is not None:
        return None
    if get_origin(annotation) is list and len(get_args(annotation)) == 1:
        (item_type,) = get_args(annotation)
        item = plain_runtime_param(TypeDescriptor(item_type, info, None))
        if not isinstance(item, _PlainRuntimeParam):
            return None
        return _PlainListRuntimeParam(parameter_info=info, annotation=annotation, item=item)
    plain = _PlainRuntimeParam(parameter_info=info, annotation=annotation)
    if plain.choices is not None:
        return plain
    if annotation not in _CONVERT:
        return None
    if annotation in (str, bool) and (info.min is not None or info.max is not None):
        return None
    return plain


def runtime_param(descriptor: TypeDescriptor) -> RuntimeParam:
    """The conversion of a parameter: plain, else typer's when first needed."""
    plain = plain_runtime_param(descriptor)
    if plain is not None:
        return plain
    info, annotation = descriptor.parameter_info, descriptor.annotation
    return _DeferredRuntimeParam(parameter_info=info, annotation=annotation, descriptor=descriptor)


def install() -> None:
    """Let typer's parameters use :func:`plain_runtime_param` first (idempotent)."""
    global _installed
    if _installed:
        return
    _installed = True
    typer_runtime_param = _TyperParameter.get_runtime_param

    def get_runtime_param(self: Any) -> RuntimeParam:
        if self._runtime_param is None:
            self._runtime_param = runtime_param(self.type_descriptor)
        return typer_runtime_param(self)

    _TyperParameter.get_runtime_param = get_runtime_param  # type: ignore[method-assign]
