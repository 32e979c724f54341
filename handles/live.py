"""Live resources: an in-process object behind a handle, rebuilt from its stored state.

A basket is data and lives in the store; a browser tab, an open transaction or a
socket does not serialise. ``Live`` attaches such an object to a kind: it is
*opened* from the handle's state, handed to handlers next to the state, and
*closed* when the handle is closed, when it expires (a reaper), and on shutdown.
After each change a ``save`` hook writes into the state what must be stored for a
faithful reopening (for a tab: its URL, history and cookies), so a call that
reaches a process that does not hold the object, or holds an outdated one, opens
it again from the stored state::

    tabs = Live(TAB, Page, open=open_page, close=close_page, save=save_page, cap=8)
    tools = HandleTools(server, manager, live=[tabs])

    @tools.edits(TAB)
    async def navigate(state: Tab, page: Page, url: str) -> TabView: ...

    async with tabs.running():  # the reaper, and every object closed on exit
        await serve_http(server)

Each process holds at most ``cap`` objects of a kind; past that, opening one more
fails with ``LiveCapReached``, which says so and what to do. Objects are keyed by
owner and handle id and remember the record version they match: a handle changed
by another process (its version moved) is reopened here rather than trusted.

The reaper closes an object once the handle's deadline, as last seen by this
process, has passed. A handle kept alive through another process is then simply
reopened here on its next call.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import anyio

from ._awaitables import maybe_await
from .errors import TransientHandleError
from .handle import Handle
from .ids import redact
from .kinds import HandleKind, humanize_duration

__all__ = ["Live", "LiveCapReached", "LiveStats"]

S = TypeVar("S")
R = TypeVar("R")
_log = logging.getLogger("handles.live")
Key = tuple[str, str]  # (owner digest, handle id)


class LiveCapReached(TransientHandleError):
    """This process already holds as many live objects of the kind as it may."""

    code = "live_cap_reached"

    def __init__(self, kind: HandleKind[Any], cap: int) -> None:
        hint = (
            f"Close one you no longer need with {kind.close_tool}, or retry after an unused "
            f"one expires ({kind.lifetime.describe(kind.plural)})."
            if kind.close_tool
            else f"Retry after an unused one expires ({kind.lifetime.describe(kind.plural)})."
        )
        super().__init__(
            f"This server already holds {cap} open {kind.label if cap == 1 else kind.plural}, "
            "the most it can at once.",
            hint,
        )
        self.cap = cap


@dataclass(slots=True)
class LiveStats:
    """What a ``Live`` has done in this process, for logs, tests and benchmarks."""

    opened: int = 0
    """Objects opened for a new handle."""
    reopened: int = 0
    """Objects opened again from stored state (not held here, or outdated)."""
    closed: dict[str, int] = field(default_factory=dict)
    """Objects closed, by why: ``closed``, ``expired``, ``outdated``, ``shutdown``, ``failed``."""
    refused: int = 0
    """Opens refused at the cap."""


@dataclass(slots=True)
class _Entry(Generic[R]):
    resource: R
    version: int
    expires_at: float
    unsaved: bool = False  # opened for the first time, and ``save`` not yet stored


class Live(Generic[S, R]):
    """In-process objects of type ``resource`` behind the handles of ``kind``.

    Args:
        kind: The handle kind.
        resource: The objects' type; a handler parameter annotated with it gets one.
        open: Builds an object from a handle's state (sync or async).
        close: Releases one (sync or async); errors are logged, never raised.
        save: Writes into the state what a faithful reopening needs, after each
            change and at creation (sync or async); ``None`` if the state says it all.
            It should only copy from the object: run twice, it writes the same.
        cap: Objects this process may hold at once.
        open_on_create: Open the object when the handle is created (the default: a
            failure to open is reported by the creating tool). ``False`` opens it on
            the first call instead, on whichever replica a gateway routes that call
            to by the handle's id, so no object is opened on one replica only to be
            reopened on another (docs/routing.md).
        reap_every: Seconds between reaper passes (``running``).
        clock: Unix seconds; give the manager's in tests.
    """

    def __init__(
        self,
        kind: HandleKind[Any],
        resource: type[R],
        *,
        open: Callable[[S], Awaitable[R] | R],
        close: Callable[[R], Awaitable[None] | None],
        save: Callable[[R, S], Awaitable[None] | None] | None = None,
        cap: int = 16,
        open_on_create: bool = True,
        reap_every: float = 1.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if cap < 1:
            raise ValueError(f"a live cap must be at least 1, got {cap!r}")
        self.kind, self.resource, self.cap = kind, resource, cap
        self.open_on_create = open_on_create
        self._open, self._close, self._save = open, close, save
        self._reap_every, self._clock = reap_every, clock
        self._held: dict[Key, _Entry[R]] = {}
        self._opening: dict[Key, anyio.Lock] = {}
        self._pending = 0  # opens under way: they count against the cap
        self.stats = LiveStats()

    def __len__(self) -> int:
        return len(self._held)

    def holds(self, owner: str, handle_id: str) -> bool:
        """Whether this process holds the object of ``owner``'s handle ``handle_id``."""
        return (owner, handle_id) in self._held

    async def create(self, state: S) -> R:
        """Open an object for a handle about to be created; ``save`` runs on ``state``.

        Raises:
            LiveCapReached: The process holds ``cap`` objects already.
        """
        self._check_cap()
        self._pending += 1
        try:
            resource: R = await maybe_await(self._open(state))
        finally:
            self._pending -= 1
        try:
            await self.save(resource, state)
        except BaseException:
            await self._release(resource, "failed")
            raise
        self.stats.opened += 1
        return resource

    def adopt(self, owner: str, handle: Handle[Any], resource: R) -> None:
        """Hold ``resource`` (from ``create``) as the object of the new ``handle``."""
        self._held[owner, handle.id] = _Entry(resource, handle.version, handle.expires_at)

    async def acquire(self, owner: str, handle: Handle[Any]) -> R:
        """The object of ``handle``, opened from its state if not held or outdated here.

        Raises:
            LiveCapReached: It has to be opened and the process is at its cap.
        """
        key = (owner, handle.id)
        entry = self._held.get(key)
        if entry is not None and entry.version == handle.version:
            entry.expires_at = max(entry.expires_at, handle.expires_at)
            return entry.resource
        lock = self._opening.setdefault(key, anyio.Lock())
        try:
            async with lock:
                return await self._reopen(key, handle)
        finally:
            if not lock.locked() and not lock.statistics().tasks_waiting:
                self._opening.pop(key, None)

    async def _reopen(self, key: Key, handle: Handle[Any]) -> R:
        entry = self._held.get(key)
        if entry is not None and entry.version == handle.version:
            return entry.resource  # opened by the caller this one waited for
        if entry is not None:
            await self._drop(key, "outdated")
        self._check_cap()
        first = not self.open_on_create and handle.version == 1
        self._pending += 1
        try:
            resource: R = await maybe_await(self._open(handle.state))
            self._held[key] = _Entry(resource, handle.version, handle.expires_at, first)
            if first:
                self.stats.opened += 1
            else:
                self.stats.reopened += 1
            _log.info(
                "%s %s %s from its stored state (version %d)",
                self.kind.label,
                redact(handle.id),
                "opened" if first else "reopened",
                handle.version,
            )
        finally:
            self._pending -= 1
        return resource

    async def save(self, resource: R, state: S) -> None:
        """Run the ``save`` hook: copy into ``state`` what a reopening needs."""
        if self._save is not None:
            await maybe_await(self._save(resource, state))

    def saw(self, owner: str, handle: Handle[Any]) -> None:
        """Record that the held object now matches ``handle`` (after a write)."""
        entry = self._held.get((owner, handle.id))
        if entry is not None:
            entry.version, entry.expires_at = handle.version, handle.expires_at
            entry.unsaved = False

    def unsaved(self, owner: str, handle_id: str) -> bool:
        """Whether the object was opened for the first time and ``save`` is not stored yet.

        Only with ``open_on_create=False``: the first call stores what ``save`` copies
        (which also marks the handle as opened once, so a later opening elsewhere
        counts as a reopening).
        """
        entry = self._held.get((owner, handle_id))
        return entry is not None and entry.unsaved

    async def forget(self, owner: str, handle_id: str) -> None:
        """The object may no longer match the stored state (a change failed): close it."""
        await self._drop((owner, handle_id), "failed")

    async def failed(self, owner: str, handle: Handle[Any]) -> None:
        """A change failed: keep the object only if ``save`` still reads ``handle``'s state.

        A change that failed before it touched the object (a refused argument) leaves
        it as the stored state describes it, so there is nothing to reopen. Without a
        ``save`` hook that cannot be told, and the object is closed.
        """
        entry = self._held.get((owner, handle.id))
        if entry is None:
            return
        if self._save is not None:
            copy = handle.state.model_copy(deep=True)
            try:
                await self.save(entry.resource, copy)
            except Exception:
                _log.debug("save failed after a failed change; closing the object")
            else:
                if copy == handle.state:
                    return
        await self._drop((owner, handle.id), "failed")

    async def release(self, resource: R, why: str) -> None:
        """Close an object that is not held (one ``create`` opened for a failed creation)."""
        await self._release(resource, why)

    async def closed(self, owner: str, handle_id: str) -> None:
        """The handle was closed: close its object, if held here."""
        await self._drop((owner, handle_id), "closed")

    async def reap(self) -> int:
        """Close every object whose handle's deadline has passed; how many were closed."""
        now = self._clock()
        due = [key for key, entry in self._held.items() if entry.expires_at <= now]
        for key in due:
            await self._drop(key, "expired")
        return len(due)

    async def aclose(self) -> None:
        """Close every object held (shutdown)."""
        for key in list(self._held):
            await self._drop(key, "shutdown")

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Live[S, R]]:
        """Run the reaper while inside; close every object on the way out."""
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._reaper)
                try:
                    yield self
                finally:
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self.aclose()

    def next_deadline(self) -> float:
        """The earliest deadline among held objects (``inf`` if none)."""
        return min((entry.expires_at for entry in self._held.values()), default=math.inf)

    async def _reaper(self) -> None:
        while True:
            await anyio.sleep(self._reap_every)
            await self.reap()

    def _check_cap(self) -> None:
        if len(self._held) + self._pending >= self.cap:
            self.stats.refused += 1
            _log.warning(
                "%s: at the cap of %d open in this process; refusing to open another "
                "(the next expiry is in %s)",
                self.kind.plural,
                self.cap,
                humanize_duration(max(1, round(self.next_deadline() - self._clock()))),
            )
            raise LiveCapReached(self.kind, self.cap)

    async def _drop(self, key: Key, why: str) -> None:
        entry = self._held.pop(key, None)
        if entry is not None:
            await self._release(entry.resource, why)
            _log.info("%s %s closed: %s", self.kind.label, redact(key[1]), why)

    async def _release(self, resource: R, why: str) -> None:
        self.stats.closed[why] = self.stats.closed.get(why, 0) + 1
        try:
            with anyio.CancelScope(shield=True):
                await maybe_await(self._close(resource))
        except Exception:
            _log.exception("closing a live %s failed", self.kind.label)
