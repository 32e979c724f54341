"""``Mcp-Param-*`` headers (SEP-2243): the annotation, every HTTP rule, and the pre-body screen.

Through the real ASGI app (httpx, no socket) for the rules, and through uvicorn
with the official ``mcp`` client for the mirroring: the client reads the
``x-mcp-header`` annotation and sends the header, the server checks it.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, MutableMapping
from dataclasses import dataclass, field
from typing import Annotated, Any

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.inbound import find_invalid_x_mcp_header
from pydantic import BaseModel, Field

from handles.errors import HandleError, UnknownHandle, WrongKind
from handles.kinds import HandleKind, Lifetime
from handles.manager import HandleManager
from handles.principal import Principal
from handles.server.dispatch import Server
from handles.server.tools import X_MCP_HEADER, Tool
from handles.stateful import HandleTools
from handles.transports._param_headers import decode_value
from handles.transports.auth import StaticTokenVerifier
from handles.transports.http import http_app
from stores.memory import MemoryStore

from ..handles.support import CountingStore
from .http_support import serving
from .test_http_rules import META, modern

pytestmark = pytest.mark.anyio
ALICE = Principal("alice", issuer="https://id.example")
BOB = Principal("bob", issuer="https://id.example")
KEY = b"param-test-key-" + b"p" * 17
Region = Annotated[str, Field(json_schema_extra={X_MCP_HEADER: "Region"})]
Priority = Annotated[int, Field(json_schema_extra={X_MCP_HEADER: "Priority"})]
Verbose = Annotated[bool, Field(json_schema_extra={X_MCP_HEADER: "Verbose"})]


class Cart(BaseModel):
    skus: list[str] = []


class Note(BaseModel):
    text: str = ""


CART = HandleKind("cart", "crt", Cart, Lifetime(idle=600), header="Cart-Id")
NOTE = HandleKind("note", "nte", Note, Lifetime(idle=600))


@dataclass
class Setup:
    store: CountingStore
    manager: HandleManager
    server: Server
    events: list[str] = field(default_factory=list)

    def app(self, principal: Principal) -> Any:
        """The HTTP app as ``principal``, recording when the body is read and ids checked."""
        inner = http_app(self.server, principal=principal)

        async def app(scope: Any, receive: Any, send: Any) -> None:
            read = False

            async def recorded() -> MutableMapping[str, Any]:
                nonlocal read
                message: MutableMapping[str, Any] = await receive()
                if message["type"] == "http.request" and not read:
                    read = True
                    self.events.append("body")
                return message

            await inner(scope, recorded, send)

        return app

    def client(self, principal: Principal) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=self.app(principal))
        return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000")


def make_setup() -> Setup:
    store = CountingStore(MemoryStore())
    manager = HandleManager(store, [CART, NOTE], secret_keys=KEY)
    server = Server("param-headers")

    @server.tool
    def echo(region: Region, priority: Priority = 0, verbose: Verbose = False) -> str:
        """Echo the mirrored arguments."""
        return f"{region}/{priority}/{verbose}"

    tools = HandleTools(server, manager)

    @tools.creates(CART)
    def create_cart() -> Cart:
        """Start a cart."""
        return Cart()

    @tools.edits(CART)
    def add_sku(state: Cart, sku: str) -> int:
        """Add a SKU."""
        state.skus.append(sku)
        return len(state.skus)

    setup = Setup(store, manager, server)
    check = manager.check

    def recorded_check(principal: Principal, kind: HandleKind[Any], handle_id: str) -> None:
        setup.events.append("screen")
        check(principal, kind, handle_id)

    manager.check = recorded_check  # type: ignore[method-assign]
    return setup


def tool_call(name: str, arguments: dict[str, Any], id: int = 7) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": META}
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}


def headers_for(name: str, **params: str) -> dict[str, str]:
    return modern("tools/call", name) | {f"mcp-param-{k}": v for k, v in params.items()}


def b64(text: str) -> str:
    return f"=?base64?{base64.b64encode(text.encode()).decode()}?="


@pytest.fixture
async def setup() -> Setup:
    return make_setup()


@pytest.fixture
async def alice(setup: Setup) -> AsyncIterator[httpx.AsyncClient]:
    async with setup.client(ALICE) as client:
        yield client


# The annotation -------------------------------------------------------------


def test_the_emitted_annotations_are_valid_for_the_official_sdk() -> None:
    server = make_setup().server
    for tool in server.tools:
        assert find_invalid_x_mcp_header(tool.definition["inputSchema"]) is None, tool.name
    echo, add_sku = server.get_tool("echo"), server.get_tool("add_sku")
    assert echo is not None and add_sku is not None
    assert echo.headers == {
        "region": ("Region", "string"),
        "priority": ("Priority", "integer"),
        "verbose": ("Verbose", "boolean"),
    }
    assert add_sku.definition["inputSchema"]["properties"]["cart_id"][X_MCP_HEADER] == "Cart-Id"
    assert add_sku.headers == {"cart_id": ("Cart-Id", "string")}


class Inner(BaseModel):
    deep: Annotated[str, Field(json_schema_extra={X_MCP_HEADER: "Deep"})]


def _bad_token(value: Annotated[str, Field(json_schema_extra={X_MCP_HEADER: "My Region"})]) -> str:
    return value


def _bad_type(value: Annotated[float, Field(json_schema_extra={X_MCP_HEADER: "Score"})]) -> str:
    return str(value)


def _optional(
    value: Annotated[str | None, Field(json_schema_extra={X_MCP_HEADER: "Maybe"})] = None,
) -> str:
    return str(value)


def _duplicate(
    one: Annotated[str, Field(json_schema_extra={X_MCP_HEADER: "MyField"})],
    two: Annotated[str, Field(json_schema_extra={X_MCP_HEADER: "myfield"})],
) -> str:
    return one + two


def _nested(inner: Inner) -> str:
    return inner.deep


@pytest.mark.parametrize(
    ("fn", "says"),
    [
        (_bad_token, "'My Region' is not an HTTP token"),
        (_bad_type, "this one's type is 'number'"),
        (_optional, "this one's type is None"),
        (_duplicate, "'myfield' is already used by argument 'one'"),
        (_nested, "only on a top-level property"),
    ],
)
def test_a_bad_declaration_is_refused_at_registration(fn: Any, says: str) -> None:
    with pytest.raises(ValueError, match="x-mcp-header") as caught:
        Tool.from_function(fn)
    assert says in str(caught.value)


def test_a_kind_header_name_is_checked() -> None:
    with pytest.raises(ValueError, match="such as 'Basket-Id', got 'Cart Id'"):
        HandleKind("cart", "crt", Cart, Lifetime(idle=600), header="Cart Id")


# Decoding -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("=?base64?SGVsbG8=?=", "Hello"),
        ("  =?base64?SGVsbG8=?=\t", "Hello"),
        (b64("café ☕"), "café ☕"),
        (b64("  padded  "), "  padded  "),
        ("=?base64?SGVsbG8?=", None),  # missing padding
        ("=?base64?SGVs!!!bG8=?=", None),  # not the alphabet
        ("=?base64?/w==?=", None),  # not UTF-8
        ("SGVsbG8=", "SGVsbG8="),  # no sentinel: literal
        ("=?base64?SGVsbG8=", "=?base64?SGVsbG8="),  # no suffix: literal
        ("SGVsbG8=?=", "SGVsbG8=?="),  # no prefix: literal
        ("  us-west1 ", "us-west1"),
    ],
)
def test_decoding(raw: str, value: str | None) -> None:
    assert decode_value(raw) == value


# The body rules -------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "headers"),
    [
        ({"region": "us-west1"}, {"region": "us-west1"}),
        ({"region": "Hello"}, {"region": "=?base64?SGVsbG8=?="}),
        ({"region": "café"}, {"region": b64("café")}),
        (
            {"region": "a", "priority": 42, "verbose": True},
            {"region": "a", "priority": "42", "verbose": "true"},
        ),
        ({"region": "a", "priority": 42}, {"region": "a", "priority": "42.0"}),
        ({"region": "a", "verbose": False}, {"region": "a", "verbose": "false"}),
        ({"region": "a", "verbose": None}, {"region": "a"}),
    ],
)
async def test_matching_headers_are_accepted(
    alice: httpx.AsyncClient, arguments: dict[str, Any], headers: dict[str, str]
) -> None:
    reply = await alice.post(
        "/mcp", json=tool_call("echo", arguments), headers=headers_for("echo", **headers)
    )
    assert reply.status_code == 200, reply.text
    assert "error" not in reply.json()
    result = reply.json()["result"]
    if arguments.get("verbose", False) is None:  # null counts as absent; the tool refuses it
        assert result["isError"] is True
    else:
        assert result["structuredContent"]["result"].startswith(f"{arguments['region']}/")


@pytest.mark.parametrize(
    ("arguments", "headers", "says"),
    [
        (
            {"region": "a"},
            {},
            "the Mcp-Param-Region header is missing and the body's 'region' argument is 'a'",
        ),
        (
            {"region": "a"},
            {"region": "b"},
            "the Mcp-Param-Region header says 'b' but the body's 'region' argument is 'a'",
        ),
        ({"region": "a"}, {"region": "A"}, "says 'A'"),
        (
            {"region": "a"},
            {"region": "a", "priority": "3"},
            "Mcp-Param-Priority header is sent ('3') but the body has no 'priority'",
        ),
        ({"region": "Hello"}, {"region": "=?base64?SGVsbG8?="}, "is not valid =?base64?…?="),
        ({"region": "a", "priority": 2}, {"region": "a", "priority": "2.5"}, "says '2.5'"),
        ({"region": "a", "verbose": True}, {"region": "a", "verbose": "True"}, "says 'True'"),
    ],
)
async def test_mismatches_are_400_with_header_mismatch(
    alice: httpx.AsyncClient, arguments: dict[str, Any], headers: dict[str, str], says: str
) -> None:
    reply = await alice.post(
        "/mcp", json=tool_call("echo", arguments), headers=headers_for("echo", **headers)
    )
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert reply.json()["id"] == 7
    assert error["code"] == -32020
    assert says in error["message"], error["message"]


async def test_a_header_sent_twice_is_a_mismatch(alice: httpx.AsyncClient) -> None:
    headers = [*headers_for("echo").items(), ("mcp-param-region", "a"), ("Mcp-Param-Region", "a")]
    reply = await alice.post("/mcp", json=tool_call("echo", {"region": "a"}), headers=headers)
    assert reply.status_code == 400
    assert "the Mcp-Param-Region header is sent 2 times" in reply.json()["error"]["message"]


async def test_a_long_value_is_cut_in_the_message(alice: httpx.AsyncClient) -> None:
    long = "x" * 500
    reply = await alice.post(
        "/mcp", json=tool_call("echo", {"region": "a"}), headers=headers_for("echo", region=long)
    )
    message = reply.json()["error"]["message"]
    assert f"'{'x' * 60}…'" in message and len(message) < 300


async def test_legacy_requests_are_not_checked(alice: httpx.AsyncClient) -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    call["params"] = {"name": "echo", "arguments": {"region": "a"}}
    headers = {"mcp-protocol-version": "2025-11-25", "mcp-param-region": "b"}
    reply = await alice.post("/mcp", json=call, headers=headers)
    assert reply.status_code == 200
    assert reply.json()["result"]["structuredContent"] == {"result": "a/0/False"}


# The screen, before the body ------------------------------------------------


async def _cart(setup: Setup, principal: Principal) -> str:
    return (await setup.manager.create(principal, CART)).id


async def test_the_callers_own_handle_passes_the_screen_and_the_call_runs(
    setup: Setup, alice: httpx.AsyncClient
) -> None:
    cart = await _cart(setup, ALICE)
    setup.events.clear()
    reply = await alice.post(
        "/mcp",
        json=tool_call("add_sku", {"cart_id": cart, "sku": "MUG"}),
        headers=headers_for("add_sku", **{"cart-id": cart}),
    )
    assert reply.json()["result"]["structuredContent"] == {"result": 1}
    assert setup.events[:2] == ["screen", "body"]


@pytest.mark.parametrize("which", ["foreign", "forged", "wrong kind"])
async def test_a_bad_handle_in_the_header_is_refused_before_the_body_without_the_store(
    setup: Setup, which: str
) -> None:
    says: HandleError
    if which == "foreign":
        handle_id = await _cart(setup, BOB)
        says = UnknownHandle(CART, handle_id)
    elif which == "forged":
        real = await _cart(setup, ALICE)
        handle_id = real[:-1] + ("A" if real[-1] != "A" else "B")
        says = UnknownHandle(CART, handle_id)
    else:
        handle_id = (await setup.manager.create(ALICE, NOTE)).id
        says = WrongKind(CART, NOTE, handle_id)
    before = dict(setup.store.calls)
    setup.events.clear()
    async with setup.client(ALICE) as alice:
        reply = await alice.post(
            "/mcp",
            json=tool_call("add_sku", {"cart_id": handle_id, "sku": "MUG"}),
            headers=headers_for("add_sku", **{"cart-id": handle_id}),
        )
    assert reply.status_code == 200
    result = reply.json()["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text == str(says)  # the tool's own words: the model never sees the header
    assert "create_cart" in text or "list_carts" in text  # what to do next
    if which == "wrong kind":
        assert "is a note id, not a cart id" in text
    assert setup.events == ["screen", "body"]  # decided from the header, before the body
    assert dict(setup.store.calls) == before  # no store access at all


async def test_a_value_that_is_no_handle_at_all_goes_on_to_the_tool(
    setup: Setup, alice: httpx.AsyncClient
) -> None:
    reply = await alice.post(
        "/mcp",
        json=tool_call("add_sku", {"cart_id": "Hello", "sku": "MUG"}),
        headers=headers_for("add_sku", **{"cart-id": "Hello"}),
    )
    result = reply.json()["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("Unknown cart 'Hello'")


async def test_the_screen_does_not_spare_the_body_check(
    setup: Setup, alice: httpx.AsyncClient
) -> None:
    cart = await _cart(setup, ALICE)
    other = await _cart(setup, ALICE)
    reply = await alice.post(
        "/mcp",
        json=tool_call("add_sku", {"cart_id": cart, "sku": "MUG"}),
        headers=headers_for("add_sku", **{"cart-id": other}),
    )
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == -32020


# The official client mirrors the header ------------------------------------


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # uvicorn runs on asyncio only
async def test_the_official_client_mirrors_the_handle_and_a_foreign_one_is_refused() -> None:
    setup = make_setup()
    bobs = await _cart(setup, BOB)
    async with serving(setup.app(ALICE)) as url, Client(streamable_http_client(url)) as client:
        created = await client.call_tool("create_cart", {})
        cart = created.structured_content["cart_id"]
        setup.events.clear()
        added = await client.call_tool("add_sku", {"cart_id": cart, "sku": "MUG"})
        assert added.structured_content == {"result": 1}
        assert setup.events[:2] == ["screen", "body"]  # the client sent Mcp-Param-Cart-Id
        setup.events.clear()
        refused = await client.call_tool("add_sku", {"cart_id": bobs, "sku": "MUG"})
        assert refused.is_error
        assert refused.content[0].text == str(UnknownHandle(CART, bobs))  # type: ignore[union-attr]
        assert setup.events == ["screen", "body"]


async def test_with_tokens_the_screen_uses_the_tokens_caller_and_a_bad_token_is_challenged(
    setup: Setup,
) -> None:
    verifier = StaticTokenVerifier({"tok-alice": ALICE, "tok-bob": BOB})
    app = http_app(setup.server, verifier=verifier, resource_url="http://127.0.0.1:8000/mcp")
    alices = await _cart(setup, ALICE)
    call = tool_call("add_sku", {"cart_id": alices, "sku": "MUG"})
    headers = headers_for("add_sku", **{"cart-id": alices})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as http:
        setup.events.clear()
        bob = await http.post(
            "/mcp", json=call, headers={**headers, "authorization": "Bearer tok-bob"}
        )
        assert bob.json()["result"]["content"][0]["text"] == str(UnknownHandle(CART, alices))
        assert setup.events == ["screen"]  # screened as bob, the token's caller
        alice = await http.post(
            "/mcp", json=call, headers={**headers, "authorization": "Bearer tok-alice"}
        )
        assert alice.json()["result"]["structuredContent"] == {"result": 1}
        nobody = await http.post(
            "/mcp", json=call, headers={**headers, "authorization": "Bearer x"}
        )
        assert nobody.status_code == 401 and "www-authenticate" in nobody.headers
