"""Groups: the ops recorded inside ``with group("l"):`` are drawn as one operator named l."""

from __future__ import annotations

from contextlib import ContextDecorator
from contextvars import ContextVar, Token
from typing import Any

__all__ = ["current", "group"]

# The groups open now, outermost first: names, or the torch modules being called.
_open: ContextVar[tuple[Any, ...]] = ContextVar("backpropviz_groups", default=())


class group(ContextDecorator):  # noqa: N801 - used like contextlib's context managers
    """Record the ops inside as one group, drawn as a single operator ``name``.

    ``with group("l"): L = ((o - y) ** 2).sum() / 2`` or, on a function,
    ``@group("penalty")``. The gradients are the engine's, unchanged: the
    group's operand edges carry what its ops sent back to each operand.
    Groups nest; ``backpropviz render --expand`` draws them opened, as boxes.
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"a group's name is a non-empty str, got {name!r}")
        self.name = name
        self._tokens: list[Token] = []

    def __repr__(self) -> str:
        return f"group({self.name!r})"

    def __enter__(self) -> group:
        self._tokens.append(_open.set((*_open.get(), self.name)))
        return self

    def __exit__(self, *exc: object) -> None:
        _open.reset(self._tokens.pop())


def current() -> tuple[Any, ...]:
    """The groups open now, outermost first."""
    return _open.get()


def enter(member: Any) -> Token:
    """Open a group (a torch module's call); close it with ``leave``."""
    return _open.set((*_open.get(), member))


def leave(token: Token) -> None:
    _open.reset(token)
