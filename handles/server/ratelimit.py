"""Rate limits on ``tools/call``: per caller, and per tool where configured.

A ``RateLimiter`` counts each call in its store (``Store.incr``), so the count
lives in the store and holds across every replica that shares it: one atomic
step per limit, and no round trip of its own for the handle tools that share
its store (below).

It uses **fixed windows**: calls are counted per caller in consecutive windows of
``per_seconds``, and a call past ``calls`` in the current window is refused until
the window ends. That is the one scheme whose whole state is a single counter
bumped atomically, which every store offers in one step (``incr``); a sliding
window needs the previous window's count too (a second read) and a token bucket
needs a read-modify-write of a timestamp (a compare-and-set loop). The cost is
burstiness at a boundary: up to twice ``calls`` can pass in one ``per_seconds``
span that straddles two windows. The wait it reports is exact: the time left in
the window. Each caller's windows start at an offset taken from its digest, so
callers' windows do not all reset at the same instant.

**One round trip with the tool's own.** A call to a handle tool whose first
effect is its store operation (the reads, edits and closes of ``HandleTools``)
need not pay for its count apart: when the limiter counts in the very store
object the tool's ``HandleManager`` uses, the server computes the call's
``RateCharge`` (``charge``) without counting, and the tool's first store
operation counts it in the same step (``Store.count_and_get``,
``Store.count_and_replace_or_read``: one Lua script on ``RedisStore``, whose
counters share the owner's hash slot). A count past a limit refuses that
operation before it does anything, and the call answers with the same
``RateLimited`` text as ever. A call that ends without having reached the store
(an invalid id, invalid arguments, an expired handle) is counted then, on its
own, and answers with the refusal if it is over: abusive calls count as before.
Every other tool, and any limiter on another store, counts before the tool runs.

If the store cannot be reached, calls are refused (fail closed) with a message
to retry shortly: a limit that lapses whenever the store is slow is no limit. A
full store (``StoreFull``) refuses with its own text, and any other exception
from the store is logged and refused the same way, so the limiter only ever
raises ``ToolError``: no call becomes a JSON-RPC internal error here.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from stores.base import Counter, CountExceeded, Store, StoreFull, StoreUnavailable

from ..errors import ToolError
from ..principal import Principal

__all__ = ["RateCharge", "RateLimit", "RateLimited", "RateLimiter"]

_log = logging.getLogger("handles.server")

_NOT_COUNTED = (
    "This call was not run: the server could not check its rate limit just now. "
    "Retry it in a few seconds."
)

_FULL = (
    "This call was not run: the server's store is full, so it could not count "
    "the call against its rate limit. This clears when the server frees space."
)

_UNITS = {1.0: "second", 60.0: "minute", 3600.0: "hour", 86400.0: "day"}


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most ``calls`` calls in each window of ``per_seconds`` seconds."""

    calls: int
    per_seconds: float = 60.0

    def __post_init__(self) -> None:
        if self.calls < 1 or not self.per_seconds > 0:
            raise ValueError("a rate limit needs calls >= 1 and per_seconds > 0")

    def describe(self) -> str:
        """E.g. "60 calls per minute" or "5 calls per 10 seconds"."""
        calls = "1 call" if self.calls == 1 else f"{self.calls} calls"
        unit = _UNITS.get(float(self.per_seconds))
        return f"{calls} per {unit or f'{self.per_seconds:g} seconds'}"


class RateLimited(ToolError):
    """A call refused by a rate limit; ``retry_after`` is whole seconds to wait.

    Args:
        limit: The limit that was reached.
        retry_after: Seconds until the window ends (at least 1).
        tool: The tool, when the limit is that tool's own.
    """

    def __init__(self, limit: RateLimit, retry_after: int, tool: str | None = None) -> None:
        what = "Too many calls" if tool is None else f"Too many calls to {tool}"
        super().__init__(
            f"{what}: at most {limit.describe()} per caller; try again in {retry_after} s."
        )
        self.limit = limit
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class RateCharge:
    """What one call must pay: a counter per limit it counts against, not yet counted.

    Attributes:
        owner: The caller's digest, the owner of the counters.
        counters: The store's counters, in the order they are counted.
        limits: For each counter, its limit and the tool it is that tool's own for
            (``None``: the limit on every tool).
        now: When the charge was made, on the limiter's clock.
    """

    owner: str
    counters: tuple[Counter, ...]
    limits: tuple[tuple[RateLimit, str | None], ...]
    now: float

    def refusal(self, error: BaseException) -> ToolError:
        """The ``ToolError`` a failure to count this charge refuses the call with.

        ``CountExceeded`` gives ``RateLimited``; ``StoreFull`` and ``StoreUnavailable``
        give the texts of a store that could not count; anything else is logged and
        refused like an unreachable store.
        """
        if isinstance(error, CountExceeded):
            limit, tool = self.limits[self.counters.index(error.counter)]
            ends = error.counter.expires_at
            return RateLimited(limit, max(1, math.ceil(ends - self.now)), tool)
        if isinstance(error, StoreFull):
            return ToolError(_FULL)
        if not isinstance(error, StoreUnavailable):
            _log.error("rate limit: the store failed to count a call", exc_info=error)
        return ToolError(_NOT_COUNTED)


class RateLimiter:
    """Counts calls in ``store`` and refuses those over a limit.

    Args:
        store: Where the counters live; share it between replicas.
        limit: The limit on each caller's calls to any tool, or ``None``.
        per_tool: Limits on each caller's calls to one tool, by tool name; they
            apply in addition to ``limit``.
        clock: Unix seconds (give the store the same one).
        group: The store group of the counters.
    """

    def __init__(
        self,
        store: Store,
        limit: RateLimit | None = None,
        *,
        per_tool: Mapping[str, RateLimit] | None = None,
        clock: Callable[[], float] = time.time,
        group: str = "rate-limit",
    ) -> None:
        self._store = store
        self._limit = limit
        self._per_tool = dict(per_tool or {})
        self._clock = clock
        self._group = group

    @property
    def store(self) -> Store:
        """Where the counters live."""
        return self._store

    def limits(self, tool: str) -> list[RateLimit]:
        """The limits a call to ``tool`` counts against."""
        own = self._per_tool.get(tool)
        return [limit for limit in (self._limit, own) if limit is not None]

    async def check(self, principal: Principal, tool: str) -> None:
        """Count one call by ``principal`` to ``tool``.

        Raises:
            RateLimited: The call is over a limit.
            ToolError: The store could not be reached (the call is refused).
        """
        await self.pay(self.charge(principal, tool))

    def charge(self, principal: Principal, tool: str) -> RateCharge:
        """What a call by ``principal`` to ``tool`` must pay, without counting it.

        Counted by ``pay``, or by a store operation that takes the counters (see
        ``Store.count_and_get``); ``RateCharge.refusal`` says what its failure means.
        """
        now, counters, limits = self._clock(), [], []
        scoped = [(self._limit, "*", None), (self._per_tool.get(tool), f"tool:{tool}", tool)]
        for limit, scope, own in scoped:
            if limit is None:
                continue
            per = limit.per_seconds
            offset = int(principal.digest[:8], 16) % 1_000_000 / 1_000_000 * per
            window = math.floor((now + offset) / per)
            ends = (window + 1) * per - offset
            counters.append(Counter(self._group, f"{scope}:{per:g}:{window}", ends, limit.calls))
            limits.append((limit, own))
        return RateCharge(principal.digest, tuple(counters), tuple(limits), now)

    async def pay(self, charge: RateCharge) -> None:
        """Count ``charge`` on its own, as ``check`` does.

        Raises:
            RateLimited: The call is over a limit.
            ToolError: The store could not count it (the call is refused).
        """
        for counter in charge.counters:
            try:
                count = await self._store.incr(
                    charge.owner, counter.group, counter.key, expires_at=counter.expires_at
                )
            except Exception as exc:
                raise charge.refusal(exc) from None
            if count > counter.limit:
                raise charge.refusal(CountExceeded(counter, count))
