"""Groups: the ops recorded inside ``with group("l"):`` are drawn as one operator named l."""

from __future__ import annotations

import itertools
from contextlib import ContextDecorator
from contextvars import ContextVar, Token
from typing import Any

__all__ = ["current", "group"]

# The groups open now, outermost first: (member, call) pairs, where a member is
# a group's name or a torch module being called, and the call number tells two
# entries into the same group apart (a function decorated with @group, called twice).
_open: ContextVar[tuple[tuple[Any, int], ...]] = ContextVar("backpropviz_groups", default=())
_calls = itertools.count()


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
        self._tokens.append(enter(self.name))
        return self

    def __exit__(self, *exc: object) -> None:
        _open.reset(self._tokens.pop())


# The groups open now, outermost first, as (member, call number) pairs: the
# context variable's own getter, not a function around it, since every op's
# result asks (value.py).
current = _open.get

# Whether a group was ever opened in this process. Until one is, no context
# has a group open and every op's result is made in none: value.py reads this
# flag rather than calling ``current`` for each op. (Never reset: a context
# copied while a group was open, as an asyncio task is, may still hold it.)
ever_opened = False


def enter(member: Any) -> Token:
    """Open a group (a name, or a torch module being called); close it with ``leave``."""
    global ever_opened
    ever_opened = True
    return _open.set((*_open.get(), (member, next(_calls))))


def numbered(paths: Any) -> dict[int, int]:
    """Call numbers renumbered 0, 1, 2... in the order they first appear in ``paths``
    (each a sequence of (member, call) pairs), so that an IR is the same in any process."""
    order: dict[int, int] = {}
    for path in paths:
        for _, call in path:
            order.setdefault(call, len(order))
    return order


def leave(token: Token) -> None:
    _open.reset(token)
