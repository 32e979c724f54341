"""A turn is never lost to cancellation: a waiter that is cancelled passes it on."""

from __future__ import annotations

import anyio
import pytest

from handles._turns import Turns

pytestmark = pytest.mark.anyio


async def test_a_cancelled_waiter_leaves_the_queue() -> None:
    turns = Turns()
    order: list[str] = []
    release = anyio.Event()

    async def hold_first() -> None:
        async with turns.hold("k"):
            await release.wait()

    async def wait(name: str, scope: anyio.CancelScope) -> None:
        with scope:
            async with turns.hold("k"):
                order.append(name)

    cancelled, patient = anyio.CancelScope(), anyio.CancelScope()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(hold_first)
        await anyio.wait_all_tasks_blocked()
        tasks.start_soon(wait, "cancelled", cancelled)
        tasks.start_soon(wait, "patient", patient)
        await anyio.wait_all_tasks_blocked()
        cancelled.cancel()
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert order == ["patient"]
    assert len(turns) == 0


async def test_a_waiter_cancelled_as_it_is_handed_the_turn_passes_it_on() -> None:
    turns = Turns()
    order: list[str] = []
    release = anyio.Event()
    scopes = {name: anyio.CancelScope() for name in ("handed", "next")}

    async def hold_first() -> None:
        async with turns.hold("k"):
            await release.wait()
            # In one step, before "handed" runs again: it is cancelled, then handed the turn.
            scopes["handed"].cancel()

    async def wait(name: str) -> None:
        with scopes[name]:
            async with turns.hold("k"):
                order.append(name)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(hold_first)
        await anyio.wait_all_tasks_blocked()
        tasks.start_soon(wait, "handed")
        await anyio.wait_all_tasks_blocked()
        tasks.start_soon(wait, "next")
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert order == ["next"]
    assert len(turns) == 0
    with anyio.fail_after(5):
        async with turns.hold("k"):  # free again: entering does not wait
            pass
