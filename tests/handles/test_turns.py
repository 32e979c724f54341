from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from handles._turns import Turns

pytestmark = pytest.mark.anyio


async def test_a_lock_lives_while_someone_uses_it() -> None:
    turns = Turns()
    first = turns.enter("a")
    second = turns.enter("a")
    other = turns.enter("b")
    assert first is second and first is not other
    assert len(turns) == 2
    turns.leave("a", first)
    assert len(turns) == 2
    turns.leave("a", second)
    turns.leave("b", other)
    assert len(turns) == 0


async def test_turns_run_one_at_a_time_in_arrival_order() -> None:
    turns = Turns()
    inside, order = 0, []

    async def take(number: int) -> None:
        nonlocal inside
        turn = turns.enter("key")
        try:
            async with turn.lock:
                inside += 1
                assert inside == 1
                await anyio.lowlevel.checkpoint()
                order.append(number)
                inside -= 1
        finally:
            turns.leave("key", turn)

    async with anyio.create_task_group() as tasks:
        for number in range(50):
            tasks.start_soon(take, number)
            await anyio.lowlevel.checkpoint()
    assert order == list(range(50))
    assert len(turns) == 0
