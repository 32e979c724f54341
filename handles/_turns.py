"""``Turns``: per-key locks, created on demand and dropped when unused.

In-process callers that update one handle take turns instead of racing a
compare-and-set: 200 optimistic contenders would retry quadratically often.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from types import TracebackType

import anyio

__all__ = ["Turn", "Turns"]


class Turn:
    """A lock and the number of tasks holding or awaiting it.

    The lock is the turn itself (``turn.lock is turn``), first come, first served.
    Taking a free turn neither allocates nor yields, as ``anyio.Lock(fast_acquire=True)``;
    only a task that has to wait creates an ``anyio.Event``. On the hot path,
    where nobody waits, this costs a small fraction of creating an ``anyio.Lock``.
    """

    __slots__ = ("_held", "_waiting", "users")

    def __init__(self) -> None:
        self.users = 0
        self._held = False
        self._waiting: deque[anyio.Event] | None = None

    @property
    def lock(self) -> Turn:
        return self

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
            raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._release()

    def _release(self) -> None:
        """Hand the turn to the longest waiter (it stays held), or free it."""
        if self._waiting:
            self._waiting.popleft().set()
        else:
            self._held = False


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
