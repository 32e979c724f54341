"""Live resources: opened, handed to handlers, saved, closed, reaped, capped, reopened.

Each test runs on two "replicas": two managers (each with its own ``Live``, as two
processes would have) over one store, a ``MemoryStore`` or a real redis-server.
The resource is an ``Editor``, an in-memory buffer that is not part of the state
until ``save`` copies it back, so a reopening is faithful only if ``save`` ran.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from handles import (
    Handle,
    HandleKind,
    HandleManager,
    HandleTools,
    Lifetime,
    Principal,
    Server,
    ToolError,
)
from handles.live import Live, LiveCapReached
from handles.transports import MemoryClient, connect_memory
from stores import MemoryStore
from stores.base import Store
from stores.redis import RedisStore
from tests.redis_fixtures import RedisServer

pytestmark = pytest.mark.anyio
KEY = b"live-test-key-" + b"l" * 18
ALICE = Principal("alice", issuer="https://id.example")
IDLE = 1.0  # seconds: short, so the expiry tests wait briefly on the real clock


class Doc(BaseModel):
    text: str = ""
    length: int = 0  # written only by save: shows that save's copy was stored


class Editor:
    """The live object: a buffer the handlers write to."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.closed = False
        self.shut_down = anyio.Event()

    def shut(self) -> None:
        self.closed = True
        self.shut_down.set()


DOC = HandleKind("doc", "doc", Doc, Lifetime(idle=IDLE), close_tool="close_doc")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # redis.asyncio runs on asyncio only


@dataclass
class Replica:
    manager: HandleManager
    live: Live[Doc, Editor]
    server: Server
    opened: list[Editor] = field(default_factory=list)
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    client: MemoryClient | None = None

    async def call(self, tool: str, **args: Any) -> dict[str, Any]:
        assert self.client is not None
        reply = await self.client.request(
            next(self.ids), "tools/call", {"name": tool, "arguments": args}
        )
        result: dict[str, Any] = reply["result"]
        return result

    async def ok(self, tool: str, **args: Any) -> Any:
        result = await self.call(tool, **args)
        assert result["isError"] is False, result
        return result["structuredContent"]


def build_replica(
    store: Store, cap: int = 3, reap_every: float = 0.05, open_on_create: bool = True
) -> Replica:
    manager = HandleManager(store, [DOC], secret_keys=KEY)
    opened: list[Editor] = []

    def open_editor(state: Doc) -> Editor:
        editor = Editor(state.text)
        opened.append(editor)
        return editor

    def save(editor: Editor, state: Doc) -> None:
        state.text = editor.text
        state.length = len(editor.text)

    live = Live(
        DOC,
        Editor,
        open=open_editor,
        close=Editor.shut,
        save=save,
        cap=cap,
        open_on_create=open_on_create,
        reap_every=reap_every,
    )
    server = Server("docs")
    tools = HandleTools(server, manager, live=[live])

    @tools.creates(DOC)
    def create_doc(text: str = "") -> Doc:
        """Open a document."""
        return Doc(text=text)

    @tools.edits(DOC)
    def type_text(state: Doc, editor: Editor, words: str) -> str:
        """Type into the document."""
        editor.text += words
        return editor.text

    @tools.edits(DOC)
    def fail_typing(state: Doc, editor: Editor, words: str) -> str:
        """Type, then fail: nothing is stored, and the editor no longer matches."""
        editor.text += words
        raise RuntimeError("the keyboard broke")

    @tools.edits(DOC)
    def refuse_typing(state: Doc, editor: Editor, words: str) -> str:
        """Refuse before touching the editor: it still matches the stored state."""
        raise ToolError(f"Refused to type {words!r}.")

    @tools.reads(DOC)
    def show(editor: Editor) -> str:
        """What the editor shows."""
        return editor.text

    @tools.closes(DOC)
    def close_doc(state: Doc) -> str:
        """Close the document."""
        return state.text

    return Replica(manager, live, server, opened)


@asynccontextmanager
async def memory_stores() -> AsyncIterator[Callable[[], Store]]:
    shared = MemoryStore()
    yield lambda: shared


@asynccontextmanager
async def redis_stores(url: str) -> AsyncIterator[Callable[[], Store]]:
    namespace = f"live-{uuid.uuid4().hex[:8]}"
    async with AsyncExitStack() as stack:

        def make() -> Store:
            store = RedisStore.from_url(url, namespace=namespace)
            stack.push_async_callback(store.aclose)
            return store

        yield make


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
async def stores(request: pytest.FixtureRequest) -> AsyncIterator[Callable[[], Store]]:
    if request.param == "memory":
        async with memory_stores() as make:
            yield make
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        async with redis_stores(server.url) as make:
            yield make


@asynccontextmanager
async def running(replica: Replica) -> AsyncIterator[Replica]:
    async with replica.live.running(), connect_memory(replica.server, ALICE) as client:
        replica.client = client
        yield replica


# ------------------------------------------------------------------------------


async def test_create_opens_and_saves_then_handlers_get_the_live_object(
    stores: Callable[[], Store],
) -> None:
    async with running(build_replica(stores())) as one:
        doc = (await one.ok("create_doc", text="hi"))["doc_id"]
        assert len(one.opened) == 1 and one.live.holds(ALICE.digest, doc)
        assert await one.ok("type_text", doc_id=doc, words=" there") == {"result": "hi there"}
        assert await one.ok("show", doc_id=doc) == {"result": "hi there"}
        assert len(one.opened) == 1  # the same editor every time
        stored = await one.manager.get(ALICE, DOC, doc)
        assert stored.state == Doc(text="hi there", length=8)  # save ran after the edit
        assert one.live.stats.opened == 1 and one.live.stats.reopened == 0


async def test_the_live_parameter_is_not_in_the_schema(stores: Callable[[], Store]) -> None:
    replica = build_replica(stores())
    tool = replica.server.get_tool("type_text")
    assert tool is not None
    assert set(tool.definition["inputSchema"]["properties"]) == {"doc_id", "words"}


async def test_closing_the_handle_closes_the_object(stores: Callable[[], Store]) -> None:
    async with running(build_replica(stores())) as one:
        doc = (await one.ok("create_doc"))["doc_id"]
        editor = one.opened[0]
        await one.ok("close_doc", doc_id=doc)
        assert editor.closed and len(one.live) == 0
        assert one.live.stats.closed == {"closed": 1}


async def test_expiry_closes_the_object_through_the_reaper(stores: Callable[[], Store]) -> None:
    async with running(build_replica(stores())) as one:
        doc = (await one.ok("create_doc"))["doc_id"]
        editor = one.opened[0]
        with anyio.fail_after(10):  # the reaper closes it once the idle second has passed
            await editor.shut_down.wait()
        assert one.live.stats.closed == {"expired": 1}
        result = await one.call("show", doc_id=doc)
        assert result["isError"] is True and "expired" in result["content"][0]["text"]
        assert len(one.opened) == 1  # an expired handle is not reopened


async def test_the_reaper_goes_by_the_latest_deadline_seen() -> None:
    now = [1000.0]
    live: Live[Doc, Editor] = Live(
        DOC, Editor, open=lambda state: Editor(state.text), close=Editor.shut, clock=lambda: now[0]
    )
    handle = Handle("doc_x", DOC, Doc(), 1, 1000, 1000 + IDLE)
    editor = await live.create(handle.state)
    live.adopt(ALICE.digest, handle, editor)
    now[0] += IDLE / 2
    renewed = Handle("doc_x", DOC, Doc(), 1, 1000, now[0] + IDLE)  # a later get renewed it
    assert await live.acquire(ALICE.digest, renewed) is editor
    now[0] = 1000 + IDLE  # the first deadline: not due any more
    assert await live.reap() == 0 and not editor.closed
    now[0] = renewed.expires_at
    assert await live.reap() == 1 and editor.closed


async def test_shutdown_closes_every_object(stores: Callable[[], Store]) -> None:
    replica = build_replica(stores())
    async with running(replica) as one:
        for _ in range(3):
            await one.ok("create_doc")
    assert [editor.closed for editor in replica.opened] == [True, True, True]
    assert replica.live.stats.closed == {"shutdown": 3}


async def test_the_cap_refuses_honestly_and_frees_a_slot_on_close(
    stores: Callable[[], Store],
) -> None:
    async with running(build_replica(stores(), cap=2)) as one:
        first = (await one.ok("create_doc"))["doc_id"]
        await one.ok("create_doc")
        refused = await one.call("create_doc")
        assert refused["isError"] is True
        text = refused["content"][0]["text"]
        assert text == (
            "This server already holds 2 open docs, the most it can at once. Close one you no "
            "longer need with close_doc, or retry after an unused one expires (docs expire "
            "after 1 second without use)."
        )
        assert len(one.opened) == 2 and one.live.stats.refused == 1
        assert len(await one.manager.list(ALICE, DOC)) == 2  # no handle was created
        await one.ok("close_doc", doc_id=first)
        await one.ok("create_doc")
        with pytest.raises(LiveCapReached):
            await one.live.create(Doc())


async def test_a_second_replica_reopens_from_the_stored_state(
    stores: Callable[[], Store],
) -> None:
    async with running(build_replica(stores())) as one, running(build_replica(stores())) as two:
        doc = (await one.ok("create_doc", text="a"))["doc_id"]
        await one.ok("type_text", doc_id=doc, words="b")
        assert await two.ok("show", doc_id=doc) == {"result": "ab"}  # reopened on two
        assert two.live.stats.reopened == 1 and len(two.opened) == 1
        await two.ok("type_text", doc_id=doc, words="c")
        # one still holds an editor at "ab": outdated, so it is reopened from "abc".
        assert await one.ok("show", doc_id=doc) == {"result": "abc"}
        assert one.live.stats.reopened == 1 and one.live.stats.closed == {"outdated": 1}
        assert one.opened[0].closed and not one.opened[1].closed
        # A second call on the same replica needs no reopening.
        assert await one.ok("show", doc_id=doc) == {"result": "abc"}
        assert one.live.stats.reopened == 1


async def test_a_refused_edit_that_left_the_object_alone_keeps_it(
    stores: Callable[[], Store],
) -> None:
    async with running(build_replica(stores())) as one:
        doc = (await one.ok("create_doc", text="same"))["doc_id"]
        refused = await one.call("refuse_typing", doc_id=doc, words="x")
        assert refused["content"][0]["text"] == "Refused to type 'x'."
        assert not one.opened[0].closed and one.live.stats.closed == {}
        assert await one.ok("show", doc_id=doc) == {"result": "same"}
        assert one.live.stats.reopened == 0


async def test_opened_on_first_use_where_the_first_call_lands(
    stores: Callable[[], Store],
) -> None:
    lazy = {"open_on_create": False}
    async with (
        running(build_replica(stores(), **lazy)) as one,
        running(build_replica(stores(), **lazy)) as two,
    ):
        doc = (await one.ok("create_doc", text="t"))["doc_id"]
        assert one.opened == [] and len(one.live) == 0  # a gateway may route the doc elsewhere
        assert await two.ok("show", doc_id=doc) == {"result": "t"}
        assert (two.live.stats.opened, two.live.stats.reopened) == (1, 0)
        stored = await two.manager.get(ALICE, DOC, doc)
        assert (stored.version, stored.state.length) == (2, 1)  # the first call stored save's copy
        assert await two.ok("show", doc_id=doc) == {"result": "t"}
        assert two.live.stats.opened == 1 and len(two.opened) == 1
        # Opened once already: a later opening anywhere is a reopening.
        assert await one.ok("show", doc_id=doc) == {"result": "t"}
        assert (one.live.stats.opened, one.live.stats.reopened) == (0, 1)


async def test_a_failed_edit_drops_the_object_and_the_next_call_reopens_it(
    stores: Callable[[], Store],
) -> None:
    async with running(build_replica(stores())) as one:
        doc = (await one.ok("create_doc", text="kept"))["doc_id"]
        failed = await one.call("fail_typing", doc_id=doc, words=" lost")
        assert failed["isError"] is True
        assert one.opened[0].closed and one.live.stats.closed == {"failed": 1}
        assert await one.ok("show", doc_id=doc) == {"result": "kept"}
        assert one.live.stats.reopened == 1


async def test_concurrent_first_calls_open_one_object(stores: Callable[[], Store]) -> None:
    async with running(build_replica(stores())) as one, running(build_replica(stores())) as two:
        doc = (await one.ok("create_doc", text="x"))["doc_id"]
        handle = await two.manager.get(ALICE, DOC, doc)
        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(two.live.acquire, ALICE.digest, handle)
        assert len(two.opened) == 1 and two.live.stats.reopened == 1


async def test_a_bad_cap_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Live(DOC, Editor, open=lambda state: Editor(""), close=Editor.shut, cap=0)
