"""``Turns``: per-key locks, created on demand and dropped when unused.

In-process callers that update one handle take turns instead of racing a
compare-and-set: 200 optimistic contenders would retry quadratically often.
Each key's lock is an ``anyio.Lock`` (first come, first served; taking a free one
does not yield), alive only while some task holds or awaits it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager

import anyio

__all__ = ["Turns"]


class _Turn:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = anyio.Lock(fast_acquire=True)
        self.users = 0


class Turns:
    """Locks by key; a key's lock lives only while some task holds or awaits it.

    Usage::

        async with turns.hold(key):
            ...
    """

    def __init__(self) -> None:
        self._turns: dict[Hashable, _Turn] = {}

    def __len__(self) -> int:
        """The number of keys with a live lock."""
        return len(self._turns)

    @asynccontextmanager
    async def hold(self, key: Hashable) -> AsyncIterator[None]:
        """Hold ``key``'s lock for the block, waiting for earlier holders first."""
        turn = self._turns.get(key)
        if turn is None:
            turn = self._turns[key] = _Turn()
        turn.users += 1
        try:
            async with turn.lock:
                yield
        finally:
            turn.users -= 1
            if not turn.users:
                del self._turns[key]
