"""manim's walk of a mobject's family, done in one loop while a clip is rendered.

manim lists a mobject's family (itself, its submobjects, theirs, and so on, in
that order) many times a frame: the camera lists what to draw, a scene lists
what to keep when a part is added or removed, a fade what it fades. manim 0.22
walks it with a generator for each level, each member passing up through every
level above it, then drops the members listed twice: in a clip's render a
sixth of the CPU time (the D2L MLP of scalars, profiled). ``family`` lists the
same members in the same order, in one loop with a stack; ``quick_families``
puts it in manim's place for as long as a scene renders, and manim's own back
after.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from manim import Mobject
from manim.utils.iterables import remove_list_redundancies

__all__ = ["QuickFamilies", "family", "quick_families"]


def family(mobject: Mobject, recurse: bool = True) -> list[Mobject]:
    """``mobject.get_family()`` as manim lists it: the mobject, then each submobject's
    family in turn; a member that is its own ancestor (a cycle) not entered again, and
    of a member listed twice, its last place kept. (``recurse`` is manim's, unused.)"""
    members, path = [mobject], {mobject}
    stack = [(mobject, iter(mobject.submobjects))]
    while stack:
        parent, rest = stack[-1]
        for child in rest:
            if child in path:  # (an ancestor of itself: manim does not enter it again)
                continue
            members.append(child)
            if child.submobjects:
                path.add(child)
                stack.append((child, iter(child.submobjects)))
                break
        else:
            stack.pop()
            path.discard(parent)
    if len(set(members)) < len(members):  # (a member listed twice: as manim keeps it)
        return remove_list_redundancies(members)
    return members


@contextlib.contextmanager
def quick_families() -> Iterator[None]:
    """manim's family walk replaced by ``family`` while the block runs (and left as it
    was found after, though the block be one of several, nested)."""
    found = Mobject.get_family
    Mobject.get_family = family
    try:
        yield
    finally:
        Mobject.get_family = found


class QuickFamilies:
    """A scene rendered with ``family`` as manim's family walk (quick_families)."""

    def render(self, *args: Any, **kwargs: Any) -> Any:
        with quick_families():
            return super().render(*args, **kwargs)  # type: ignore[misc]
