"""A turn is never lost to cancellation: a waiter that is cancelled passes it on."""

from __future__ import annotations

import anyio
import pytest

from handles._turns import Turns

pytestmark = pytest.mark.anyio


async def test_a_cancelled_waiter_leaves_the_queue() -> None:
    turns = Turns()
    order: list[str] = []
    first = turns.enter("k")
    await first.lock.__aenter__()

    async def wait(name: str, scope: anyio.CancelScope) -> None:
        turn = turns.enter("k")
        try:
            with scope:
                async with turn.lock:
                    order.append(name)
        finally:
            turns.leave("k", turn)

    cancelled, patient = anyio.CancelScope(), anyio.CancelScope()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(wait, "cancelled", cancelled)
        tasks.start_soon(wait, "patient", patient)
        await anyio.wait_all_tasks_blocked()
        cancelled.cancel()
        await anyio.wait_all_tasks_blocked()
        await first.lock.__aexit__(None, None, None)
        turns.leave("k", first)
    assert order == ["patient"]
    assert len(turns) == 0


async def test_a_waiter_cancelled_as_it_is_handed_the_turn_passes_it_on() -> None:
    turns = Turns()
    order: list[str] = []
    first = turns.enter("k")
    await first.lock.__aenter__()
    scopes = {name: anyio.CancelScope() for name in ("handed", "next")}

    async def wait(name: str) -> None:
        turn = turns.enter("k")
        try:
            with scopes[name]:
                async with turn.lock:
                    order.append(name)
        finally:
            turns.leave("k", turn)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(wait, "handed")
        await anyio.wait_all_tasks_blocked()
        tasks.start_soon(wait, "next")
        await anyio.wait_all_tasks_blocked()
        # In one step, before "handed" runs again: it is cancelled, then handed the turn.
        scopes["handed"].cancel()
        await first.lock.__aexit__(None, None, None)
        turns.leave("k", first)
    assert order == ["next"]
    assert len(turns) == 0
    again = turns.enter("k")
    with anyio.fail_after(5):
        async with again.lock:  # free again: entering does not wait
            pass
    turns.leave("k", again)
