"""``Turns``: per-key locks, created on demand and dropped when unused.

In-process callers that update one handle take turns instead of racing a
compare-and-set: 200 optimistic contenders would retry quadratically often.

Each key's lock is a ``Turn``: first come, first served, and taking a free turn
neither allocates nor yields, as ``anyio.Lock(fast_acquire=True)``; only a task that
has to wait creates an ``anyio.Event``. It is written here because an ``anyio.Lock``
made per key and held through ``asynccontextmanager`` costs several times as much on
every edit (``benchmarks/RESULTS.md``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from types import TracebackType

import anyio

__all__ = ["Turns"]


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

    def hold(self, key: Hashable) -> _Turn:
        """``key``'s lock, to hold for an ``async with`` block, after earlier holders."""
        turn = self._turns.get(key)
        if turn is None:
            turn = self._turns[key] = _Turn(self._turns, key)
        turn.users += 1
        return turn


class _Turn:
    """A lock and the number of tasks holding or awaiting it; gone when that is zero."""

    __slots__ = ("_held", "_key", "_turns", "_waiting", "users")

    def __init__(self, turns: dict[Hashable, _Turn], key: Hashable) -> None:
        self._turns, self._key = turns, key
        self.users = 0
        self._held = False
        self._waiting: deque[anyio.Event] | None = None

    async def __aenter__(self) -> None:
        if not self._held:
            self._held = True
            return
        if self._waiting is None:
            self._waiting = deque()
        handed = anyio.Event()
        self._waiting.append(handed)
        try:
            await handed.wait()
        except BaseException:
            if handed.is_set():  # the turn was handed over as we were cancelled: pass it on
                self._release()
            else:
                self._waiting.remove(handed)
            self._leave()
            raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._release()
        self._leave()

    def _release(self) -> None:
        """Hand the turn to the longest waiter (it stays held), or free it."""
        if self._waiting:
            self._waiting.popleft().set()
        else:
            self._held = False

    def _leave(self) -> None:
        self.users -= 1
        if not self.users:
            del self._turns[self._key]
