"""``HandleTools`` through the in-memory transport: schemas, commits, closes and error texts."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import anyio
import pytest
from pydantic import BaseModel

import handles
from handles import (
    Context,
    Handle,
    HandleKind,
    HandleManager,
    HandleTools,
    InputRequired,
    Lifetime,
    Principal,
    Server,
    TextContent,
    ToolError,
    ToolResult,
)
from handles.transports import MemoryClient, connect_memory
from stores import MemoryStore, Record, StoreUnavailable
from stores.testing import ManualClock

from . import txn_example

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 11, 29, 23, 59, tzinfo=UTC).timestamp()
KEY = b"stateful-test-key-" + b"s" * 14
ALICE = Principal("alice", issuer="https://id.example")
BOB = Principal("bob", issuer="https://id.example")
SENTENCE = "Tallies expire after 10 minutes without use and 1 hour after creation."
POLICY = "tallies expire after 10 minutes without use and 1 hour after creation"
START_NEW = "Call create_tally to start a new tally."
ID_DESCRIPTION = f"The tally id, exactly as create_tally returned it (starts with tly_). {SENTENCE}"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
SERVER_META = {
    "io.modelcontextprotocol/serverInfo": {"name": "tallies", "version": handles.__version__}
}


class Tally(BaseModel):
    count: int = 0
    log: list[str] = []


class Note(BaseModel):
    text: str = ""


TALLY = HandleKind(
    "tally",
    "tly",
    Tally,
    Lifetime(idle=600, absolute=3600),
    quota=2,
    plural="tallies",
    close_tool="finish_tally",
)
NOTE = HandleKind("note", "note", Note, Lifetime(absolute=60))


class FlakyStore(MemoryStore):
    """A ``MemoryStore`` whose reads, creates and edits fail while ``down`` is set."""

    down = False

    def _check(self) -> None:
        if self.down:
            raise StoreUnavailable("connection refused", applied=False)

    async def create(
        self,
        owner: str,
        group: str,
        key: str,
        value: bytes,
        *,
        expires_at: float,
        limit: int | None = None,
    ) -> Record | None:
        self._check()
        return await super().create(owner, group, key, value, expires_at=expires_at, limit=limit)

    async def get(
        self, owner: str, group: str, key: str, *, renew_until: float | None = None
    ) -> Record | None:
        self._check()
        return await super().get(owner, group, key, renew_until=renew_until)

    async def replace_or_read(
        self,
        owner: str,
        group: str,
        key: str,
        value: bytes,
        *,
        version: int,
        expires_at: float,
    ) -> tuple[bool, Record | None]:
        self._check()  # an edit of a remembered state reads nothing first
        return await super().replace_or_read(
            owner, group, key, value, version=version, expires_at=expires_at
        )

    async def list(self, owner: str, group: str) -> dict[str, Record]:
        self._check()
        return await super().list(owner, group)


@dataclass
class Gate:
    """Lets a test hold ``finish_tally`` between its read and its close."""

    entered: anyio.Event = field(default_factory=anyio.Event)
    release: anyio.Event = field(default_factory=anyio.Event)


@dataclass
class App:
    server: Server
    clock: ManualClock
    store: FlakyStore
    gate: Gate
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @asynccontextmanager
    async def connect(self, principal: Principal = ALICE) -> AsyncIterator[Caller]:
        async with connect_memory(self.server, principal) as client:
            yield Caller(client, self.ids)


@dataclass
class Caller:
    client: MemoryClient
    ids: itertools.count[int]

    async def call(self, tool: str, meta: dict[str, Any] | None = None, **args: Any) -> Any:
        """The ``tools/call`` result (legacy era unless ``meta`` is given)."""
        params: dict[str, Any] = {"name": tool, "arguments": args}
        if meta is not None:
            params["_meta"] = meta
        reply = await self.client.request(next(self.ids), "tools/call", params)
        return reply["result"]

    async def ok(self, tool: str, **args: Any) -> Any:
        result = await self.call(tool, **args)
        assert result["isError"] is False, result
        return result["structuredContent"]

    async def create(self, tool: str = "create_tally") -> str:
        handle_id: str = (await self.ok(tool))[f"{tool.removeprefix('create_')}_id"]
        return handle_id


def error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def build() -> App:
    clock, gate = ManualClock(T0), Gate()
    store = FlakyStore(clock=clock)
    manager = HandleManager(store, [TALLY, NOTE], secret_keys=KEY, clock=clock)
    server = Server("tallies")
    tools = HandleTools(server, manager)

    @tools.creates(TALLY)
    async def create_tally() -> Tally:
        """Start a tally at zero.

        Args:
            unused: Not a parameter; only the summary becomes the description.
        """
        return Tally()

    @tools.creates(NOTE, description="Start an empty note.")
    async def create_note() -> None:
        return None

    @tools.edits(TALLY)
    async def bump(state: Tally, tally_id: str, by: int = 1, fail: bool = False) -> Tally:
        """Add to a tally.

        Args:
            by: How much to add.
            fail: Refuse after changing the state.
        """
        state.count += by
        state.log.append(tally_id[-4:])
        if fail:
            raise ToolError("Refused after changing the state.")
        return state

    @tools.reads(TALLY)
    async def peek(state: Tally, handle: Handle[Tally]) -> dict[str, Any]:
        """Show a tally; it also scribbles on its copy, which must not be saved."""
        seen = state.count
        state.count = -1
        state.log.append("scribble")
        return {
            "count": seen,
            "log": handle.state.log,
            "version": handle.version,
            "expires_at": handle.expires_at_iso,
            "id_matches": handle.id.startswith("tly_"),
        }

    @tools.closes(TALLY, reason="finished")
    async def finish_tally(
        state: Tally,
        ctx: Context,
        mode: Literal["ok", "error", "ask", "error-result"] = "ok",
        wait: bool = False,
    ) -> Tally | InputRequired | ToolResult:
        """End a tally."""
        if wait:
            gate.entered.set()
            await gate.release.wait()
        if mode == "error":
            raise ToolError("Not finishing.")
        if mode == "ask":
            return InputRequired(input_requests={"sure": {"method": "elicitation/create"}})
        if mode == "error-result":
            return ToolResult([TextContent("Not finishing either.")], is_error=True)
        return state

    @tools.lists(TALLY)
    async def list_tallies(tallies: list[Handle[Tally]]) -> list[str]:
        """Your open tallies."""
        return [handle.id for handle in tallies]

    return App(server, clock, store, gate)


def definition(app: App, name: str) -> dict[str, Any]:
    return next(tool.definition for tool in app.server.tools if tool.name == name)


# --- What the model sees in tools/list ---------------------------------------


async def test_the_handle_parameter_comes_first_and_says_where_ids_come_from() -> None:
    bump = definition(build(), "bump")
    assert bump["description"] == "Add to a tally."
    assert bump["inputSchema"] == {
        "additionalProperties": False,
        "properties": {
            "tally_id": {
                "description": ID_DESCRIPTION,
                "maxLength": 256,
                "title": "Tally Id",
                "type": "string",
            },
            "by": {
                "default": 1,
                "description": "How much to add.",
                "title": "By",
                "type": "integer",
            },
            "fail": {
                "default": False,
                "description": "Refuse after changing the state.",
                "title": "Fail",
                "type": "boolean",
            },
        },
        "required": ["tally_id"],
        "type": "object",
    }
    assert list(bump["inputSchema"]["properties"]) == ["tally_id", "by", "fail"]


async def test_state_handle_and_context_parameters_stay_out_of_the_schema() -> None:
    app = build()
    for name in ("peek", "finish_tally"):
        properties = definition(app, name)["inputSchema"]["properties"]
        assert properties["tally_id"]["description"] == ID_DESCRIPTION
    assert list(definition(app, "peek")["inputSchema"]["properties"]) == ["tally_id"]
    assert list(definition(app, "finish_tally")["inputSchema"]["properties"]) == [
        "tally_id",
        "mode",
        "wait",
    ]
    for name in ("create_tally", "list_tallies"):
        assert definition(app, name)["inputSchema"] == {
            "additionalProperties": False,
            "properties": {},
            "type": "object",
        }


async def test_the_lifetime_sentence_ends_the_creating_tools_description() -> None:
    app = build()
    create = definition(app, "create_tally")
    assert create["description"] == f"Start a tally at zero.\n\n{SENTENCE}"
    assert definition(app, "create_note")["description"] == (
        "Start an empty note.\n\nNotes expire 1 minute after creation."
    )
    assert create["outputSchema"] == {
        "properties": {
            "tally_id": {
                "description": "The new tally's id.",
                "title": "Tally Id",
                "type": "string",
            },
            "expires_at": {
                "description": "When it expires unless used (ISO 8601, UTC).",
                "title": "Expires At",
                "type": "string",
            },
        },
        "required": ["tally_id", "expires_at"],
        "type": "object",
    }


async def test_annotations_say_what_each_helper_does() -> None:
    app = build()
    annotations = {tool.name: tool.definition["annotations"] for tool in app.server.tools}
    writes = {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False}
    assert annotations == {
        "create_tally": writes,
        "create_note": writes,
        "bump": writes,
        "peek": {"readOnlyHint": True, "openWorldHint": False},
        "finish_tally": {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": False},
        "list_tallies": {"readOnlyHint": True, "openWorldHint": False},
    }


async def test_explicit_annotations_and_name_override_the_defaults() -> None:
    server = Server("override")
    tools = HandleTools(server, HandleManager(MemoryStore(), [TALLY], secret_keys=KEY))

    @tools.reads(TALLY, name="show", annotations={"idempotentHint": True, "openWorldHint": True})
    async def peek(state: Tally) -> Tally:
        """Show a tally."""
        return state

    (tool,) = server.tools
    assert tool.name == "show"
    assert tool.definition["annotations"] == {
        "readOnlyHint": True,
        "openWorldHint": True,
        "idempotentHint": True,
    }


# --- Creates, edits, reads, lists --------------------------------------------


async def test_create_returns_the_id_and_when_it_expires() -> None:
    app = build()
    async with app.connect() as alice:
        result = await alice.call("create_tally")
    tally_id = result["structuredContent"]["tally_id"]
    assert tally_id.startswith("tly_") and len(tally_id) == 47
    assert result["structuredContent"] == {
        "tally_id": tally_id,
        "expires_at": "2026-11-30T00:09:00Z",
    }
    assert result["content"] == [
        {"type": "text", "text": f'{{"tally_id":"{tally_id}","expires_at":"2026-11-30T00:09:00Z"}}'}
    ]


async def test_edits_commit_and_the_handler_gets_the_id() -> None:
    app = build()
    async with app.connect() as alice:
        tally_id = await alice.create()
        first = await alice.ok("bump", tally_id=tally_id, by=2)
        second = await alice.ok("bump", tally_id=tally_id, by=3)
        shown = await alice.ok("peek", tally_id=tally_id)
    assert first == {"count": 2, "log": [tally_id[-4:]]}
    assert second == {"count": 5, "log": [tally_id[-4:]] * 2}
    assert shown == {
        "count": 5,
        "log": [tally_id[-4:]] * 2,
        "version": 3,
        "expires_at": "2026-11-30T00:09:00Z",
        "id_matches": True,
    }


async def test_an_edit_that_raises_writes_nothing() -> None:
    app = build()
    async with app.connect() as alice:
        tally_id = await alice.create()
        await alice.ok("bump", tally_id=tally_id)
        refused = await alice.call("bump", tally_id=tally_id, by=10, fail=True)
        shown = await alice.ok("peek", tally_id=tally_id)
    assert refused == error("Refused after changing the state.")
    assert (shown["count"], shown["log"], shown["version"]) == (1, [tally_id[-4:]], 2)


async def test_reads_do_not_persist_changes_and_renew_the_idle_lifetime() -> None:
    app = build()
    async with app.connect() as alice:
        tally_id = await alice.create()
        await alice.ok("bump", tally_id=tally_id)
        app.clock.now += 300
        once = await alice.ok("peek", tally_id=tally_id)
        app.clock.now += 500  # 800 s after the bump: alive only because peek renewed it
        twice = await alice.ok("peek", tally_id=tally_id)
    assert (once["count"], once["log"], once["version"]) == (1, [tally_id[-4:]], 2)
    assert (twice["count"], twice["log"], twice["version"]) == (1, [tally_id[-4:]], 2)
    assert once["expires_at"] == "2026-11-30T00:14:00Z"
    assert twice["expires_at"] == "2026-11-30T00:22:20Z"


async def test_lists_gets_the_callers_open_handles_oldest_first() -> None:
    app = build()
    async with app.connect() as alice, app.connect(BOB) as bob:
        first = await alice.create()
        app.clock.now += 1
        second = await alice.create()
        await bob.create()
        assert await alice.ok("list_tallies") == {"result": [first, second]}
        await alice.ok("finish_tally", tally_id=first)
        assert await alice.ok("list_tallies") == {"result": [second]}
        app.clock.now += 601
        assert await alice.ok("list_tallies") == {"result": []}


# --- Closes --------------------------------------------------------------------


async def test_a_close_returns_the_final_state_then_the_handle_reads_closed() -> None:
    app = build()
    async with app.connect() as alice:
        tally_id = await alice.create()
        await alice.ok("bump", tally_id=tally_id, by=4)
        app.clock.now += 60
        finished = await alice.ok("finish_tally", tally_id=tally_id)
        app.clock.now += 60
        after = [await alice.call(tool, tally_id=tally_id) for tool in ("peek", "bump")]
        again = await alice.call("finish_tally", tally_id=tally_id)
    assert finished == {"count": 4, "log": [tally_id[-4:]]}
    closed = error(
        f"Tally '{tally_id}' was finished at 2026-11-30T00:00:00Z and can no longer be used. "
        f"{START_NEW}"
    )
    assert after == [closed, closed]
    assert again == closed


async def test_a_handler_that_raises_leaves_the_handle_open() -> None:
    app = build()
    async with app.connect() as alice:
        tally_id = await alice.create()
        refused = await alice.call("finish_tally", tally_id=tally_id, mode="error")
        shown = await alice.ok("peek", tally_id=tally_id)
        assert await alice.ok("list_tallies") == {"result": [tally_id]}
    assert refused == error("Not finishing.")
    assert (shown["count"], shown["version"]) == (0, 1)


async def test_an_error_result_leaves_the_handle_open() -> None:
    app = build()
    async with app.connect() as alice:
        tally_id = await alice.create()
        refused = await alice.call("finish_tally", tally_id=tally_id, mode="error-result")
        shown = await alice.ok("peek", tally_id=tally_id)
    assert refused == error("Not finishing either.")
    assert (shown["count"], shown["version"]) == (0, 1)


async def test_input_required_leaves_the_handle_open() -> None:
    app = build()
    async with app.connect() as alice:
        tally_id = await alice.create()
        asked = await alice.call("finish_tally", meta=MODERN_META, tally_id=tally_id, mode="ask")
        shown = await alice.ok("peek", tally_id=tally_id)
        finished = await alice.call("finish_tally", meta=MODERN_META, tally_id=tally_id)
    assert asked == {
        "resultType": "input_required",
        "inputRequests": {"sure": {"method": "elicitation/create"}},
        "_meta": SERVER_META,
    }
    assert (shown["count"], shown["version"]) == (0, 1)
    assert finished["resultType"] == "complete"
    assert finished["structuredContent"] == {"count": 0, "log": []}


async def test_a_close_conflicts_if_the_state_changed_after_the_handler_read_it() -> None:
    app = build()
    async with app.connect() as alice:
        tally_id = await alice.create()
        await alice.client.send(
            {
                "jsonrpc": "2.0",
                "id": "finish",
                "method": "tools/call",
                "params": {
                    "name": "finish_tally",
                    "arguments": {"tally_id": tally_id, "wait": True},
                },
            }
        )
        with anyio.fail_after(5):
            await app.gate.entered.wait()  # finish_tally has read version 1
        bumped = await alice.ok("bump", tally_id=tally_id)  # version 2
        app.gate.release.set()
        with anyio.fail_after(5):
            reply = await alice.client.receive()
        shown = await alice.ok("peek", tally_id=tally_id)
        listed = await alice.ok("list_tallies")
    assert bumped == {"count": 1, "log": [tally_id[-4:]]}
    assert reply == {
        "jsonrpc": "2.0",
        "id": "finish",
        "result": error(
            f"Tally '{tally_id}' changed since it was read; this change was not applied. "
            "Retry this call shortly."
        ),
    }
    assert (shown["count"], shown["version"]) == (1, 2)
    assert listed == {"result": [tally_id]}


async def test_of_two_concurrent_closes_one_commits_and_both_return_its_result() -> None:
    """The slow close read the same version but lost: it answers the winner's result, the
    one committed with the tombstone, never a second result of its own."""
    app = build()
    async with app.connect() as alice:
        tally_id = await alice.create()
        await alice.ok("bump", tally_id=tally_id)
        await alice.client.send(
            {
                "jsonrpc": "2.0",
                "id": "slow",
                "method": "tools/call",
                "params": {
                    "name": "finish_tally",
                    "arguments": {"tally_id": tally_id, "wait": True},
                },
            }
        )
        with anyio.fail_after(5):
            await app.gate.entered.wait()
        fast = await alice.ok("finish_tally", tally_id=tally_id)
        app.gate.release.set()
        with anyio.fail_after(5):
            slow = await alice.client.receive()
        again = await alice.call("finish_tally", tally_id=tally_id)
    assert fast["count"] == 1 and len(fast["log"]) == 1
    assert slow["id"] == "slow" and slow["result"]["structuredContent"] == fast
    assert again == error(
        f"Tally '{tally_id}' was finished at 2026-11-29T23:59:00Z and can no longer be used. "
        f"{START_NEW}"
    )


# --- Every handle error is an isError result with the exact text -------------


def unknown(handle_id: str) -> dict[str, Any]:
    return error(
        f"Unknown tally '{handle_id}'. Copy the tally_id exactly as create_tally returned it, "
        "call list_tallies to see your open tallies, or call create_tally to start a new one."
    )


async def test_an_invented_and_a_foreign_id_read_the_same() -> None:
    app = build()
    invented = "tly_" + "A" * 43
    async with app.connect(BOB) as bob, app.connect() as alice:
        foreign = await bob.create()
        for tool in ("peek", "bump", "finish_tally"):
            assert await alice.call(tool, tally_id=invented) == unknown(invented)
            assert await alice.call(tool, tally_id=foreign) == unknown(foreign)
        assert await alice.call("peek", tally_id="") == unknown("")
        long = "tly_" + "x" * 100
        assert await alice.call("peek", tally_id=long) == unknown(long[:60] + "…")
        assert (await bob.ok("peek", tally_id=foreign))["version"] == 1


async def test_an_id_longer_than_the_schema_allows_is_an_input_error() -> None:
    app = build()
    async with app.connect() as alice:
        result = await alice.call("peek", tally_id="tly_" + "x" * 300)
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("Input validation error in peek: tally_id: ")


async def test_a_note_id_where_a_tally_id_goes_is_the_wrong_kind() -> None:
    app = build()
    async with app.connect() as alice:
        note_id = await alice.create("create_note")
        result = await alice.call("bump", tally_id=note_id)
    assert note_id.startswith("note_")
    assert result == error(
        f"'{note_id}' is a note id, not a tally id. Pass a tally_id exactly as create_tally "
        "returned it, or call list_tallies to see your open tallies."
    )


async def test_expiry_when_idle_and_at_the_absolute_deadline() -> None:
    app = build()
    async with app.connect() as alice:
        idle = await alice.create()
        busy = await alice.create()
        app.clock.now += 500
        await alice.ok("bump", tally_id=busy)
        app.clock.now += 101  # 601 s since idle was last used
        assert await alice.call("bump", tally_id=idle) == error(
            f"Tally '{idle}' has expired; the exact time is not known ({POLICY}). {START_NEW}"
        )
        await alice.ok("bump", tally_id=busy)
        for _ in range(5):  # used every 500 s, up to 3101 s after creation
            app.clock.now += 500
            await alice.ok("bump", tally_id=busy)
        app.clock.now = T0 + 3600  # used 499 s ago, but this is its absolute end
        assert await alice.call("peek", tally_id=busy) == error(
            f"Tally '{busy}' expired at 2026-11-30T00:59:00Z ({POLICY}). {START_NEW}"
        )


async def test_quota() -> None:
    app = build()
    async with app.connect() as alice:
        await alice.create()
        await alice.create()
        assert await alice.call("create_tally") == error(
            "You already have 2 open tallies, the most allowed. Call finish_tally on one you "
            f"no longer need (list_tallies lists them), or wait for one to expire: {POLICY}."
        )


async def test_an_unreachable_store() -> None:
    app = build()
    async with app.connect() as alice:
        tally_id = await alice.create()
        app.store.down = True
        results = [
            await alice.call("create_tally"),
            await alice.call("peek", tally_id=tally_id),
            await alice.call("bump", tally_id=tally_id),
            await alice.call("finish_tally", tally_id=tally_id),
            await alice.call("list_tallies"),
        ]
        app.store.down = False
        shown = await alice.ok("peek", tally_id=tally_id)
    text = "The tally store is temporarily unavailable. Retry this call in a few seconds."
    assert results == [error(text)] * 5
    assert (shown["count"], shown["version"]) == (0, 1)


# --- The second example: a transaction -----------------------------------------


class CountingDatabase(dict[str, str]):
    updates = 0

    def update(self, *args: Any, **kwargs: Any) -> None:
        self.updates += 1
        super().update(*args, **kwargs)


async def test_concurrent_commits_apply_the_writes_once() -> None:
    database = CountingDatabase()
    server = txn_example.build_server(database)
    async with connect_memory(server, ALICE) as alice:
        begun = await alice.request(1, "tools/call", {"name": "begin_transaction"})
        txn_id = begun["result"]["structuredContent"]["txn_id"]
        stage = {"name": "stage", "arguments": {"txn_id": txn_id, "key": "k", "value": "v"}}
        await alice.request(2, "tools/call", stage)
        results: list[Any] = []

        async def commit(n: int) -> None:
            params = {"name": "commit", "arguments": {"txn_id": txn_id}}
            results.append((await alice.request(10 + n, "tools/call", params))["result"])

        async with anyio.create_task_group() as tg:
            for n in range(10):
                tg.start_soon(commit, n)
    assert database.updates == 1 and database == {"k": "v"}
    answers = [r.get("structuredContent") for r in results if not r["isError"]]
    assert answers and all(answer == {"k": "v"} for answer in answers)
    for result in results:
        if result["isError"]:
            assert " was committed at " in result["content"][0]["text"]


async def test_the_transaction_example_commits_and_rolls_back() -> None:
    database = {"colour": "red"}
    server = txn_example.build_server(database)
    calls = itertools.count(1)

    async def call(client: MemoryClient, tool: str, **args: Any) -> Any:
        params = {"name": tool, "arguments": args}
        return (await client.request(next(calls), "tools/call", params))["result"]

    async with connect_memory(server, ALICE) as alice:
        begun = await call(alice, "begin_transaction")
        txn_id = begun["structuredContent"]["txn_id"]
        await call(alice, "stage", txn_id=txn_id, key="colour", value="blue")
        staged = await call(alice, "stage", txn_id=txn_id, key="size", value="L")
        assert staged["structuredContent"] == {"writes": {"colour": "blue", "size": "L"}}
        assert database == {"colour": "red"}  # nothing is written before commit

        committed = await call(alice, "commit", txn_id=txn_id)
        assert committed["structuredContent"] == {"colour": "blue", "size": "L"}
        assert database == {"colour": "blue", "size": "L"}
        late = await call(alice, "stage", txn_id=txn_id, key="colour", value="green")
        assert late["isError"] is True
        assert late["content"][0]["text"].startswith(f"Transaction '{txn_id}' was committed at ")
        assert late["content"][0]["text"].endswith(
            "and can no longer be used. Call begin_transaction to start a new transaction."
        )

        other = (await call(alice, "begin_transaction"))["structuredContent"]["txn_id"]
        await call(alice, "stage", txn_id=other, key="colour", value="green")
        assert (await call(alice, "list_transactions"))["structuredContent"] == {"result": [other]}
        rolled = await call(alice, "rollback", txn_id=other)
        assert rolled["structuredContent"] == {
            "result": f"Rolled back {other}; nothing was written."
        }
        assert database == {"colour": "blue", "size": "L"}
        again = await call(alice, "commit", txn_id=other)
        assert again["content"][0]["text"].startswith(f"Transaction '{other}' was rolled back at ")
        assert (await call(alice, "list_transactions"))["structuredContent"] == {"result": []}

    begin = next(t.definition for t in server.tools if t.name == "begin_transaction")
    assert begin["description"] == (
        "Begin a transaction: stage writes in it, then commit or roll back.\n\n"
        "Transactions expire after 5 minutes without use."
    )


async def test_an_edit_that_returns_an_error_result_writes_nothing() -> None:
    app = build()
    manager = HandleManager(app.store, [NOTE], secret_keys=KEY, clock=app.clock)
    tools = HandleTools(app.server, manager)

    @tools.edits(NOTE)
    async def scribble(state: Note, text: str) -> Note | ToolResult:
        """Change a note, then report a failure."""
        state.text = text
        return ToolResult([TextContent("Could not save the note.")], is_error=True)

    @tools.reads(NOTE)
    async def read_note(state: Note) -> Note:
        """Show a note."""
        return state

    async with app.connect() as alice:
        note_id = await alice.create("create_note")
        refused = await alice.call("scribble", note_id=note_id, text="lost")
        shown = await alice.ok("read_note", note_id=note_id)
    assert refused == error("Could not save the note.")
    assert shown == {"text": ""}


async def test_an_edits_handler_cannot_ask_for_the_whole_handle() -> None:
    tools = HandleTools(Server("t"), HandleManager(MemoryStore(), [NOTE], secret_keys=KEY))

    async def rename(handle: Handle[Note], text: str) -> None:
        """Not allowed: edits get the state."""

    with pytest.raises(
        ValueError, match="an edits handler takes the state \\(Note\\), not a Handle"
    ):
        tools.edits(NOTE)(rename)
