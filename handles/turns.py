"""``Turns``: per-key ``anyio.Lock`` objects, created on demand and dropped when unused.

In-process callers that update one handle take turns instead of racing a
compare-and-set: 200 optimistic contenders would retry quadratically often.
"""

from __future__ import annotations

from collections.abc import Hashable

import anyio

__all__ = ["Turn", "Turns"]


class Turn:
    """A lock and the number of tasks holding or awaiting it."""

    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = anyio.Lock(fast_acquire=True)
        self.users = 0


class Turns:
    """Locks by key; a key's lock lives only while some task holds or awaits it.

    Usage::

        turn = turns.enter(key)
        try:
            async with turn.lock:
                ...
        finally:
            turns.leave(key, turn)
    """

    def __init__(self) -> None:
        self._turns: dict[Hashable, Turn] = {}

    def __len__(self) -> int:
        """The number of keys with a live lock."""
        return len(self._turns)

    def enter(self, key: Hashable) -> Turn:
        """Register interest in ``key``'s lock (creating it) and return it."""
        turn = self._turns.get(key)
        if turn is None:
            turn = self._turns[key] = Turn()
        turn.users += 1
        return turn

    def leave(self, key: Hashable, turn: Turn) -> None:
        """Drop interest in ``key``'s lock; the last one out removes it."""
        turn.users -= 1
        if not turn.users:
            del self._turns[key]
