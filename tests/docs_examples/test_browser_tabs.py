"""docs/examples/browser_tabs.py on a real headless Chromium, end to end with the ``mcp`` client.

Debian's ``chromium`` through Playwright, pages from a local ``http.server``, the
tab server over real HTTP (uvicorn). Small on purpose: one browser for the
module and a tab or two per test (the machine's cores are shared).
"""

from __future__ import annotations

import base64
import shutil
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from playwright.async_api import Browser

from docs.examples.browser_tabs import CHROMIUM, build, launch_browser
from handles.principal import Principal
from handles.transports.http import http_app
from stores.memory import MemoryStore

from ..transports.http_support import serving
from .support import site

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]
ALICE = Principal("alice", issuer="https://id.example")
SECRET = "browser-tabs-key-" + "s" * 15


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # uvicorn and Playwright's async API run on asyncio


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with site() as url:
        yield url


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    assert shutil.which(CHROMIUM), f"{CHROMIUM} is missing: apt-get install -y chromium"
    async with launch_browser() as browser:
        yield browser


def text_of(result: Any) -> str:
    return str(result.content[0].text)


async def ok(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert result.is_error is False, text_of(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def test_a_tab_end_to_end_with_the_official_client(browser: Browser, base: str) -> None:
    server, pages = build(browser, MemoryStore(), secret_keys=SECRET)
    contexts = len(browser.contexts)
    async with (
        pages.running(),
        serving(http_app(server, principal=ALICE)) as url,
        Client(streamable_http_client(url)) as client,
    ):
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(listed) == {
            "open_tab",
            "navigate",
            "back",
            "read_page",
            "screenshot",
            "list_tabs",
            "close_tab",
        }
        assert listed["read_page"].input_schema["properties"]["tab_id"]["x-mcp-header"] == "Tab-Id"

        tab = (await ok(client, "open_tab", url=f"{base}/a"))["tab_id"]
        assert tab.startswith("tab_") and len(browser.contexts) == contexts + 1
        page = await ok(client, "read_page", tab_id=tab)
        assert page["title"] == "Page A" and "The first page." in page["text"]

        moved = await ok(client, "navigate", tab_id=tab, url=f"{base}/b")
        assert moved == {"tab_id": tab, "url": f"{base}/b", "title": "Page B", "can_go_back": True}
        assert "The second page." in (await ok(client, "read_page", tab_id=tab))["text"]

        shot = await client.call_tool("screenshot", {"tab_id": tab})
        image = shot.content[0]
        assert image.type == "image" and image.mime_type == "image/png"
        assert base64.b64decode(image.data).startswith(b"\x89PNG\r\n\x1a\n")

        back = await ok(client, "back", tab_id=tab)
        assert (back["url"], back["can_go_back"]) == (f"{base}/a", False)
        assert (await ok(client, "read_page", tab_id=tab))["title"] == "Page A"
        no_earlier = await client.call_tool("back", {"tab_id": tab})
        assert no_earlier.is_error and "has no earlier page" in text_of(no_earlier)

        tabs = (await ok(client, "list_tabs"))["tabs"]
        assert [(t["tab_id"], t["url"]) for t in tabs] == [(tab, f"{base}/a")]

        await ok(client, "close_tab", tab_id=tab)
        assert len(browser.contexts) == contexts  # the page and its context are gone
        gone = await client.call_tool("read_page", {"tab_id": tab})
        assert gone.is_error and "was closed" in text_of(gone)
    assert (pages.stats.opened, pages.stats.reopened) == (1, 0)  # a refused back kept the page


async def test_bad_urls_and_the_cap_are_refused_with_what_to_do(
    browser: Browser, base: str
) -> None:
    server, pages = build(browser, MemoryStore(), secret_keys=SECRET, cap=1)
    async with (
        pages.running(),
        serving(http_app(server, principal=ALICE)) as url,
        Client(streamable_http_client(url)) as client,
    ):
        bad = await client.call_tool("open_tab", {"url": "file:///etc/passwd"})
        assert bad.is_error and text_of(bad) == (
            "Cannot open 'file:///etc/passwd': only http:// and https:// URLs with a host are "
            "allowed. Pass a full URL such as https://example.com/."
        )
        unreachable = await client.call_tool("open_tab", {"url": "http://127.0.0.1:9/"})
        assert unreachable.is_error
        assert text_of(unreachable).startswith("Could not load 'http://127.0.0.1:9/': ")
        await ok(client, "open_tab", url=f"{base}/a")
        full = await client.call_tool("open_tab", {"url": f"{base}/b"})
        assert full.is_error and text_of(full).startswith(
            "This server already holds 1 open tab, the most it can at once. "
            "Close one you no longer need with close_tab"
        )
        assert len((await ok(client, "list_tabs"))["tabs"]) == 1


async def test_an_idle_tab_expires_and_its_page_is_closed(browser: Browser, base: str) -> None:
    server, pages = build(browser, MemoryStore(), secret_keys=SECRET, idle=2)
    async with (
        pages.running(),
        serving(http_app(server, principal=ALICE)) as url,
        Client(streamable_http_client(url)) as client,
    ):
        tab = (await ok(client, "open_tab", url=f"{base}/a"))["tab_id"]
        page = browser.contexts[-1].pages[0]
        closed = anyio.Event()
        page.on("close", lambda _: closed.set())
        with anyio.fail_after(30):  # 2 s idle, then the reaper's next pass
            await closed.wait()
        assert pages.stats.closed == {"expired": 1}
        expired = await client.call_tool("read_page", {"tab_id": tab})
        assert expired.is_error and "expired" in text_of(expired)


async def test_another_replica_reopens_the_tab_with_its_url_history_and_cookies(
    browser: Browser, base: str
) -> None:
    store = MemoryStore()  # shared, as Redis is between real replicas
    one_server, one_pages = build(browser, store, secret_keys=SECRET)
    two_server, two_pages = build(browser, store, secret_keys=SECRET)
    async with (
        one_pages.running(),
        two_pages.running(),
        serving(http_app(one_server, principal=ALICE)) as one_url,
        serving(http_app(two_server, principal=ALICE)) as two_url,
        Client(streamable_http_client(one_url)) as one,
        Client(streamable_http_client(two_url)) as two,
    ):
        tab = (await ok(one, "open_tab", url=f"{base}/cookie"))["tab_id"]
        await ok(one, "navigate", tab_id=tab, url=f"{base}/b")

        page = await ok(two, "read_page", tab_id=tab)  # two does not hold it: reopened
        assert page["title"] == "Page B"
        assert (two_pages.stats.reopened, one_pages.stats.reopened) == (1, 0)
        who = await ok(two, "navigate", tab_id=tab, url=f"{base}/whoami")
        assert who["title"] == "Who"
        assert "cookies: seen=yes" in (await ok(two, "read_page", tab_id=tab))["text"]
        assert (await ok(two, "back", tab_id=tab))["url"] == f"{base}/b"
        back_again = await ok(two, "back", tab_id=tab)
        assert back_again["url"] == f"{base}/cookie"

        # One's page is outdated now (two moved the tab on): one reopens it too.
        assert (await ok(one, "read_page", tab_id=tab))["title"] == "Cookie"
        assert one_pages.stats.reopened == 1 and one_pages.stats.closed == {"outdated": 1}
