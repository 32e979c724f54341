"""The basket server while Redis is frozen (``DEBUG SLEEP 3``), longer than its 2 s timeout.

Calls already sent when Redis froze get no answer in time, yet Redis runs them when
it wakes. The safety property: no acknowledged add is lost, and no add refused
with a "retry" text was applied. Per basket, with ``ok`` acknowledged adds and
``unknown`` answers saying it is not known whether the add was applied, the final
quantity lies in ``[ok, ok + unknown]``; anything above is a refused write that was
applied (counted, and it must be 0). The same for created baskets.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.to_thread
import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from example_basket.app import MAX_LINES, build_server
from example_basket.catalog import CATALOG
from handles.principal import Principal
from handles.server.dispatch import Server
from stores.redis import RedisStore
from tests.redis_fixtures import RedisServer, running_redis_server

from .support import SECRET, call_in_process

pytestmark = [pytest.mark.anyio, pytest.mark.redis, pytest.mark.slow, pytest.mark.timeout(120)]
ALICE = Principal("alice")
FREEZE_SECONDS = 3
BASKETS = 16
SKUS = sorted(CATALOG)[:MAX_LINES]
RETRY = "The basket store is temporarily unavailable. Retry this call in a few seconds."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def debug_redis() -> Iterator[RedisServer]:
    with running_redis_server("--enable-debug-command", "local") as server:
        yield server


async def call(server: Server, tool: str, **arguments: Any) -> dict[str, Any]:
    return await call_in_process(server, ALICE, tool, **arguments)


def classify(result: dict[str, Any]) -> str:
    """ "ok", "retry" (nothing was applied, says the text) or "unknown"."""
    if not result["isError"]:
        return "ok"
    text = result["content"][0]["text"]
    if text == RETRY:
        return "retry"
    assert text.startswith("The basket store did not answer in time, so it is not known whether")
    assert text.endswith("Call list_baskets to see the current state before repeating this call.")
    assert "retry" not in text.lower()
    return "unknown"


class Freeze:
    """``DEBUG SLEEP`` on its own connection, in a thread; ``frozen`` once Redis stalls."""

    def __init__(self, server: RedisServer) -> None:
        self.server = server
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sleep)

    def _sleep(self) -> None:
        client = redis.Redis(port=self.server.port, socket_timeout=FREEZE_SECONDS + 30)
        client.execute_command("DEBUG", "SLEEP", FREEZE_SECONDS)  # type: ignore[no-untyped-call]
        self.done.set()

    def start(self) -> None:
        self.thread.start()

    def wait_frozen(self) -> None:
        """Block until a PING goes unanswered for a while, or the sleep is over."""
        probe = redis.Redis(port=self.server.port, socket_timeout=0.2, retry=Retry(NoBackoff(), 0))
        while not self.done.is_set():
            try:
                probe.ping()
            except redis.TimeoutError:
                return
        raise AssertionError("Redis answered throughout its DEBUG SLEEP")


@pytest.mark.parametrize("path", ["wire", "redis-py"])
async def test_no_refused_write_is_applied_while_redis_is_frozen(
    debug_redis: RedisServer, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    namespace = f"frozen-{uuid.uuid4().hex}"
    options: dict[str, Any] = {} if path == "wire" else {"health_check_interval": 0}
    async with RedisStore.from_url(debug_redis.url, namespace=namespace, **options) as store:
        server = build_server(store, secret_keys=SECRET)
        baskets = []
        for _ in range(BASKETS):
            baskets.append((await call(server, "create_basket"))["structuredContent"]["basket_id"])
        adds: dict[str, Counter[str]] = {basket_id: Counter() for basket_id in baskets}
        creates: Counter[str] = Counter()
        freeze = Freeze(debug_redis)
        thawed = anyio.Event()

        async def add(basket_id: str) -> None:
            after, n = 0, 0
            while after < 3:  # keep calling through the freeze, then three more
                sku, n = SKUS[n % len(SKUS)], n + 1  # spread: a line holds at most 999
                result = await call(server, "add_item", basket_id=basket_id, sku=sku)
                adds[basket_id][classify(result)] += 1
                after += thawed.is_set()

        async def create() -> None:
            after = 0
            while after < 3:
                creates[classify(await call(server, "create_basket"))] += 1
                after += thawed.is_set()

        async def freeze_once() -> None:
            freeze.start()
            await anyio.to_thread.run_sync(freeze.wait_frozen)
            await anyio.to_thread.run_sync(freeze.thread.join)
            thawed.set()

        async with anyio.create_task_group() as tg:
            for basket_id in baskets:
                tg.start_soon(add, basket_id)
            for _ in range(4):
                tg.start_soon(create)
            tg.start_soon(freeze_once)

        applied_but_refused = 0
        for basket_id, answers in adds.items():
            shown = await call(server, "get_basket", basket_id=basket_id)
            quantity = sum(line["quantity"] for line in shown["structuredContent"]["items"])
            assert quantity >= answers["ok"], "an acknowledged add was lost"
            applied_but_refused += max(0, quantity - answers["ok"] - answers["unknown"])
        listed = len((await call(server, "list_baskets"))["structuredContent"]["baskets"])
        made = listed - BASKETS
        assert made >= creates["ok"], "an acknowledged create was lost"
        applied_but_refused += max(0, made - creates["ok"] - creates["unknown"])

    totals = sum(adds.values(), Counter())
    settled = sum("no answer from the store" in r.getMessage() for r in caplog.records)
    timed_out = totals["retry"] + totals["unknown"] + creates["retry"] + creates["unknown"]
    print(
        f"\n{path}: add_item {dict(totals)}, create_basket {dict(creates)}; writes read back "
        f"after no answer: {settled}; refused but applied: {applied_but_refused}"
    )
    assert settled + timed_out > 0, "no call met the freeze"
    assert applied_but_refused == 0
