"""How an option is declared and read: ``OptionSpec``, the one parser of option values.

Options are declared in ``hudi_sync.config``, one constructor per kind (``string_option``,
``boolean_option``...), so each declaration reads as what it is and ``read`` is typed.

How a value is read:

- the key is looked up first, then its ``alternates`` in order; the first one given
  wins (``None`` is not given, and a blank text gives way to a later spelling's value);
- absent: the default (a list with no default reads as ``()``);
- ``string``: trimmed; a blank text reads as absent;
- ``list``: comma-separated (or a sequence), items trimmed, blank items dropped;
- ``boolean``: ``true`` or ``false`` in any case (or a Python bool), nothing else;
- ``integer``: a whole number; ``number``: a decimal number (NaN refused); both at
  least ``minimum`` and at most ``maximum`` when set;
- ``choice``: one of ``choices`` in any case, read as the declared spelling.

A value that does not parse (a blank boolean, number or choice included) raises
``BadInputError`` with one line naming the key as given and the value.

"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast, overload

from hudi_sync.errors import BadInputError

T = TypeVar("T")

KINDS = ("string", "boolean", "integer", "number", "list", "choice")


@dataclass(frozen=True)
class OptionSpec(Generic[T]):
    """One option: ``read`` gives its value of type ``T`` from a mapping of options."""

    key: str
    alternates: tuple[str, ...]  # other accepted spellings, looked up after ``key``
    default: object  # None: no default
    kind: str  # one of KINDS
    versions: tuple[int, ...]  # table versions it applies to; () = all
    doc: str  # one line
    group: str
    choices: tuple[str, ...] = ()  # kind "choice": the accepted values
    minimum: int | None = None  # kind "integer" / "number": the smallest accepted value
    maximum: int | None = None  # kind "integer" / "number": the largest accepted value

    @property
    def names(self) -> tuple[str, ...]:
        return (self.key, *self.alternates)

    def given(self, options: Mapping[str, object]) -> bool:
        """Whether the options hold this key or an alternate (even blank)."""
        return any(options.get(name) is not None for name in self.names)

    def text(self, options: Mapping[str, object]) -> str | None:
        """The given text exactly as given (untrimmed, blank kept), else the default: for
        values compared with data, secrets, and values a parser of their own reads
        (instants, CDC logging modes)."""
        found = self._lookup(options)
        if found is not None:
            return str(found[1])
        return None if self.default is None else str(self.default)

    def read(self, options: Mapping[str, object]) -> T:
        """The typed value; BadInputError (one line, naming the key) when it does not parse."""
        found = self._lookup(options)
        if found is not None and _blank(found[1]) and self.kind in ("string", "list"):
            found = None
        if found is None:
            if self.kind == "list":
                return cast(T, tuple(cast(Sequence[str], self.default or ())))
            return cast(T, self.default)
        return cast(T, self._parse(*found))

    def _lookup(self, options: Mapping[str, object]) -> tuple[str, object] | None:
        """The first (spelling, value) given, preferring one that is not blank."""
        blank: tuple[str, object] | None = None
        for name in self.names:
            value = options.get(name)
            if value is None:
                continue
            if not _blank(value):
                return name, value
            blank = blank or (name, value)
        return blank

    def _parse(self, name: str, value: object) -> object:
        if self.kind == "string":
            return str(value).strip()
        if self.kind == "list":
            items = value.split(",") if isinstance(value, str) else cast(Sequence[Any], value)
            return tuple(str(i).strip() for i in items if str(i).strip())
        if self.kind == "boolean":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text not in ("true", "false"):
                raise BadInputError(f"{name}={value!r} is not true or false")
            return text == "true"
        if self.kind == "choice":
            text = str(value).strip().lower()
            for choice in self.choices:
                if choice.lower() == text:
                    return choice
            raise BadInputError(f"{name}={text!r} is not one of {', '.join(self.choices)}")
        return self._number(name, value)

    def _number(self, name: str, value: object) -> int | float:
        number: int | float
        try:
            if isinstance(value, bool):
                raise ValueError(value)
            if self.kind == "integer":
                number = value if isinstance(value, int) else int(str(value).strip())
            else:
                number = float(value) if isinstance(value, int | float) else float(str(value))
        except ValueError:
            what = "a whole number" if self.kind == "integer" else "a number"
            raise BadInputError(f"{name}={value!r} is not {what}") from None
        if self.kind == "number" and number != number:
            raise BadInputError(f"{name}={value!r} is not a number")
        if self.minimum is not None and not number >= self.minimum:
            raise BadInputError(f"{name}={number} must be at least {self.minimum}")
        if self.maximum is not None and not number <= self.maximum:
            raise BadInputError(f"{name}={number} must be at most {self.maximum}")
        return number


def _blank(value: object) -> bool:
    return isinstance(value, str) and not value.strip()


_declared: list[OptionSpec[Any]] = []


def declared() -> tuple[OptionSpec[Any], ...]:
    """Every option declared so far, in declaration order."""
    return tuple(_declared)


def _declare(spec: OptionSpec[T]) -> OptionSpec[T]:
    if spec.kind not in KINDS:
        raise ValueError(f"{spec.key}: kind {spec.kind!r} is not one of {KINDS}")
    _declared.append(spec)
    return spec


def _make(kind: str, key: str, doc: str, group: str, default: object, **more: Any) -> Any:
    return _declare(
        OptionSpec(
            key=key,
            alternates=more.pop("alternates", ()),
            default=default,
            kind=kind,
            versions=more.pop("versions", ()),
            doc=doc,
            group=group,
            **more,
        )
    )


# One constructor per kind, so each declaration reads as what it is and ``read`` is typed.
@overload
def string_option(
    key: str, doc: str, group: str, *, default: str, **more: Any
) -> OptionSpec[str]: ...
@overload
def string_option(
    key: str, doc: str, group: str, *, default: None = None, **more: Any
) -> OptionSpec[str | None]: ...
def string_option(
    key: str, doc: str, group: str, *, default: str | None = None, **more: Any
) -> OptionSpec[Any]:
    return cast(OptionSpec[Any], _make("string", key, doc, group, default, **more))


def list_option(key: str, doc: str, group: str, **more: Any) -> OptionSpec[tuple[str, ...]]:
    return cast(OptionSpec[tuple[str, ...]], _make("list", key, doc, group, None, **more))


def boolean_option(
    key: str, doc: str, group: str, *, default: bool, **more: Any
) -> OptionSpec[bool]:
    return cast(OptionSpec[bool], _make("boolean", key, doc, group, default, **more))


@overload
def integer_option(
    key: str, doc: str, group: str, *, default: int, **more: Any
) -> OptionSpec[int]: ...
@overload
def integer_option(
    key: str, doc: str, group: str, *, default: None = None, **more: Any
) -> OptionSpec[int | None]: ...
def integer_option(
    key: str, doc: str, group: str, *, default: int | None = None, **more: Any
) -> OptionSpec[Any]:
    return cast(OptionSpec[Any], _make("integer", key, doc, group, default, **more))


def number_option(
    key: str, doc: str, group: str, *, default: float, **more: Any
) -> OptionSpec[float]:
    return cast(OptionSpec[float], _make("number", key, doc, group, default, **more))


def choice_option(
    key: str, doc: str, group: str, *, default: str, choices: tuple[str, ...], **more: Any
) -> OptionSpec[str]:
    if default not in choices:
        raise ValueError(f"{key}: default {default!r} is not one of {choices}")
    return cast(OptionSpec[str], _make("choice", key, doc, group, default, choices=choices, **more))
