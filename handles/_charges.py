"""A call's rate-limit count, handed from the server to the handle layer's first store step.

The server (``handles.server.dispatch``) counts each ``tools/call`` against its
rate limiter. For a tool whose first effect is a handle store operation, it
puts a ``Pending`` charge here instead of counting; the handle layer's first
operation on that store for that owner in the call takes it (``take``) and runs
as ``Store.count_and_get`` or ``Store.count_and_replace_or_read``: the count and
the operation in one step, one round trip on ``RedisStore``. The server counts a
charge nobody took once the tool returns.

Neutral ground: both wings import this module and it imports nothing of
``handles``. The refusal (``RateLimited``'s text, or the texts of a store that
could not count) comes from the server, as ``Pending.refuse``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar

from stores.base import Counter, CountExceeded, Record, Store, StoreFull, StoreUnavailable

__all__ = ["PENDING", "Pending", "get", "replace_or_read", "take"]


class Pending:
    """A charge not yet counted, for the first operation on ``store`` for ``owner``.

    Args:
        store: The store the counters live in.
        owner: The caller's digest, owner of the counters and of the records.
        counters: What to count.
        refuse: The exception a failure to count means (given that failure).
    """

    __slots__ = ("_refuse", "counters", "owner", "refused", "spent", "store")

    def __init__(
        self,
        store: Store,
        owner: str,
        counters: Sequence[Counter],
        refuse: Callable[[BaseException], BaseException],
    ) -> None:
        self.store = store
        self.owner = owner
        self.counters = counters
        self.spent = False
        self.refused: BaseException | None = None
        self._refuse = refuse

    def refusal(self, error: BaseException) -> BaseException:
        """The exception that refuses the call, for ``error`` from the charged operation."""
        self.refused = self._refuse(error)
        return self.refused


PENDING: ContextVar[Pending | None] = ContextVar("handles_pending_charge", default=None)


def take(store: Store, owner: str) -> Pending | None:
    """The call's pending charge if this operation on ``store`` for ``owner`` is to count it."""
    pending = PENDING.get()
    if pending is None or pending.spent or pending.store is not store or pending.owner != owner:
        return None
    pending.spent = True
    return pending


async def get(
    store: Store, owner: str, group: str, key: str, *, renew_until: float | None = None
) -> Record | None:
    """``store.get``, counting the call's pending charge with it if it is this one's.

    A read may be retried freely, so any ``StoreUnavailable`` of a charged read
    refuses the call as a store that could not count (as the server would have).
    """
    pending = take(store, owner)
    if pending is None:
        return await store.get(owner, group, key, renew_until=renew_until)
    try:
        return await store.count_and_get(
            owner, group, key, charge=pending.counters, renew_until=renew_until
        )
    except (CountExceeded, StoreUnavailable) as exc:
        raise pending.refusal(exc) from None


async def replace_or_read(
    store: Store,
    pending: Pending | None,
    owner: str,
    group: str,
    key: str,
    value: bytes,
    *,
    version: int,
    expires_at: float,
) -> tuple[bool, Record | None]:
    """``store.replace_or_read``, counting ``pending`` (from ``take``) with it when given.

    A ``StoreUnavailable`` that certainly changed nothing (``applied=False``)
    refuses the call as a store that could not count, except ``StoreFull``: a full
    store refuses the edit itself (on Redis the whole script, before it runs), and
    the edit's own text says what frees space, as it does without a limiter. One
    whose write may have applied (``applied=None``) propagates, for the writer to
    settle.
    """
    if pending is None:
        return await store.replace_or_read(
            owner, group, key, value, version=version, expires_at=expires_at
        )
    try:
        return await store.count_and_replace_or_read(
            owner,
            group,
            key,
            value,
            version=version,
            expires_at=expires_at,
            charge=pending.counters,
        )
    except CountExceeded as exc:
        raise pending.refusal(exc) from None
    except StoreFull:
        raise
    except StoreUnavailable as exc:
        if exc.applied is False:
            raise pending.refusal(exc) from None
        raise
