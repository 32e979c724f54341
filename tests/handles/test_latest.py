"""``Latest``: what an edit remembers of each handle's last version, and its bound."""

from __future__ import annotations

import pytest

from handles._latest import ENTRY_OVERHEAD, Latest
from handles.manager import CACHE_BYTES, HandleManager
from stores.base import Record
from stores.memory import MemoryStore
from stores.testing import ManualClock

from .support import ALICE, BASKET, KEY, KINDS, T0, Basket, CountingStore, make_env

pytestmark = pytest.mark.anyio


def key(n: int) -> tuple[str, str, str]:
    return ("owner", "basket", f"h{n}")


def test_holds_at_most_max_bytes_least_recently_used_out() -> None:
    latest = Latest(3 * (ENTRY_OVERHEAD + 10))
    for n in range(3):
        latest.put(key(n), Record(b"x" * 10, 1, 0.0))
    assert latest.get(key(0)) is not None  # now the most recently used
    latest.put(key(3), Record(b"x" * 10, 1, 0.0))
    assert (len(latest), latest.bytes) == (3, 3 * (ENTRY_OVERHEAD + 10))
    assert latest.get(key(1)) is None
    assert all(latest.get(key(n)) is not None for n in (0, 2, 3))


def test_a_value_over_the_bound_is_not_held() -> None:
    latest = Latest(2 * (ENTRY_OVERHEAD + 10))
    latest.put(key(0), Record(b"x" * 10, 1, 0.0))
    latest.put(key(1), Record(b"x" * 10, 1, 0.0))
    latest.put(key(0), Record(b"x" * (ENTRY_OVERHEAD + 21), 2, 0.0))
    assert latest.get(key(0)) is None  # the old version is gone too
    assert (len(latest), latest.bytes) == (1, ENTRY_OVERHEAD + 10)  # the others stay


def test_a_read_never_replaces_a_newer_version() -> None:
    latest = Latest(10_000)
    latest.put(key(0), Record(b"new", 3, 0.0))
    latest.offer(key(0), Record(b"old", 2, 0.0))
    assert latest.get(key(0)) == Record(b"new", 3, 0.0)
    latest.offer(key(0), Record(b"newer", 4, 0.0))
    assert latest.get(key(0)) == Record(b"newer", 4, 0.0)
    latest.drop(key(0))
    assert (latest.get(key(0)), latest.bytes) == (None, 0)


def bump(state: Basket) -> None:
    state.count += 1


async def test_an_edit_of_a_remembered_handle_reads_nothing_first() -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET)
    await env.manager.update(ALICE, BASKET, handle.id, bump)
    await env.manager.update(ALICE, BASKET, handle.id, bump)
    assert (env.store.calls["get"], env.store.calls["replace"]) == (0, 2)
    assert (await env.manager.get(ALICE, BASKET, handle.id)).state.count == 2


async def test_without_memory_every_edit_reads_first() -> None:
    env = make_env(cache_bytes=0)
    handle = await env.manager.create(ALICE, BASKET)
    await env.manager.update(ALICE, BASKET, handle.id, bump)
    await env.manager.update(ALICE, BASKET, handle.id, bump)
    assert (env.store.calls["get"], env.store.calls["replace"]) == (2, 2)


async def test_the_managers_memory_is_bounded() -> None:
    size = len(Basket().model_dump_json()) + ENTRY_OVERHEAD
    env = make_env(cache_bytes=2 * size)
    handles = [await env.manager.create(ALICE, BASKET) for _ in range(3)]  # quota 3
    latest = env.manager._latest
    assert (len(latest), latest.bytes) == (2, 2 * size)
    await env.manager.update(ALICE, BASKET, handles[0].id, bump)  # forgotten: read first
    assert env.store.calls["get"] == 1
    assert len(latest) == 2


def test_a_negative_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        Latest(-1)


def test_by_default_only_a_store_with_costly_reads_is_remembered() -> None:
    clock = ManualClock(T0)
    memory = MemoryStore(clock=clock)
    assert HandleManager(memory, KINDS, secret_keys=KEY)._latest.max_bytes == 0
    wrapped = CountingStore(memory)  # stands for any other store
    assert HandleManager(wrapped, KINDS, secret_keys=KEY)._latest.max_bytes == CACHE_BYTES
    chosen = HandleManager(memory, KINDS, secret_keys=KEY, cache_bytes=1000)
    assert chosen._latest.max_bytes == 1000
