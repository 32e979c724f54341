from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from handles._turns import Turns

pytestmark = pytest.mark.anyio


async def test_a_lock_lives_while_someone_uses_it() -> None:
    turns = Turns()
    async with turns.hold("a"):
        assert len(turns) == 1
        async with turns.hold("b"):
            assert len(turns) == 2
        assert len(turns) == 1
    assert len(turns) == 0


async def test_a_key_waits_for_its_holder_and_others_do_not() -> None:
    turns = Turns()
    entered: list[str] = []
    release = anyio.Event()

    async def hold_a() -> None:
        async with turns.hold("a"):
            await release.wait()

    async def take(key: str) -> None:
        async with turns.hold(key):
            entered.append(key)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(hold_a)
        await anyio.wait_all_tasks_blocked()
        tasks.start_soon(take, "a")
        tasks.start_soon(take, "b")
        await anyio.wait_all_tasks_blocked()
        assert entered == ["b"]
        assert len(turns) == 1  # "a" is held and awaited; "b" came and went
        release.set()
    assert entered == ["b", "a"]
    assert len(turns) == 0


async def test_turns_run_one_at_a_time_in_arrival_order() -> None:
    turns = Turns()
    inside, order = 0, []

    async def take(number: int) -> None:
        nonlocal inside
        async with turns.hold("key"):
            inside += 1
            assert inside == 1
            await anyio.lowlevel.checkpoint()
            order.append(number)
            inside -= 1

    async with anyio.create_task_group() as tasks:
        for number in range(50):
            tasks.start_soon(take, number)
            await anyio.lowlevel.checkpoint()
    assert order == list(range(50))
    assert len(turns) == 0
