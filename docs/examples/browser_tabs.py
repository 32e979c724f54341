"""Browser tabs as handles: a real headless Chromium behind ``open_tab`` and friends.

Each tab is a handle (``tab_…``) whose state is what a faithful reopening needs:
the URL, the tab's own history and its cookies. The page itself is a live object
(``handles.live.Live``): opened in its own browser context when the tab is opened,
handed to the tools, and closed when the tab is closed, when it expires (after
``idle`` seconds without use, 5 minutes by default), and on shutdown. A call that
reaches a replica that does not hold the page reopens it there from the stored
state. The tab id is published as the ``Mcp-Param-Tab-Id`` header, so a gateway
can send every call of a tab to the replica that holds it (docs/routing.md).

Run it (Playwright from PyPI, Debian's ``chromium`` as the browser; no download)::

    pip install playwright
    python -m docs.examples.browser_tabs --port 8010 [--redis redis://127.0.0.1:6379/0]

Every replica behind one gateway needs the same ``HANDLES_SECRET`` and store.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio
from playwright.async_api import Browser, Page, async_playwright
from playwright.async_api import Error as PlaywrightError
from pydantic import BaseModel, Field

from handles import (
    Handle,
    HandleKind,
    HandleManager,
    HandleTools,
    ImageContent,
    Lifetime,
    Live,
    Server,
    ToolError,
)
from stores.base import Store
from stores.memory import MemoryStore

__all__ = ["CHROMIUM_FLAGS", "TAB", "Tab", "TabPage", "build", "launch_browser", "main"]

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""Quiet flags: no first-run work, no calls home (a closed network refuses them)."""
DEFAULT_IDLE = 300.0
MAX_TEXT = 20_000
_SCHEMES = ("http", "https")
_LOAD_TIMEOUT_MS = 15_000
logger = logging.getLogger("browser_tabs")


class Tab(BaseModel):
    """What is stored for a tab: enough to open it again, faithfully, anywhere."""

    url: str
    history: list[str] = Field(default_factory=list)
    index: int = 0
    cookies: list[dict[str, Any]] = Field(default_factory=list)
    title: str = ""


class TabView(BaseModel):
    """A tab as the model sees it."""

    tab_id: str
    url: str
    title: str
    can_go_back: bool


class TabText(BaseModel):
    """A page's visible text, cut to 20,000 characters."""

    url: str
    title: str
    text: str
    truncated: bool


class TabList(BaseModel):
    """The caller's open tabs, oldest first."""

    tabs: list[TabView]


TabPage = Page
"""The live object: a Playwright page in a browser context of its own."""


def tab_kind(idle: float = DEFAULT_IDLE) -> HandleKind[Tab]:
    """The tab kind; tabs expire after ``idle`` seconds without use."""
    return HandleKind(
        name="tab",
        prefix="tab",
        model=Tab,
        lifetime=Lifetime(idle=idle, absolute=max(idle, 86400)),
        quota=20,
        close_tool="close_tab",
        header="Tab-Id",
    )


TAB = tab_kind()


def _checked_url(url: str) -> str:
    parts = urlsplit(url.strip())
    if parts.scheme not in _SCHEMES or not parts.netloc:
        raise ToolError(
            f"Cannot open {url[:80]!r}: only http:// and https:// URLs with a host are "
            "allowed. Pass a full URL such as https://example.com/."
        )
    return url.strip()


async def _goto(page: Page, url: str) -> None:
    try:
        await page.goto(url, wait_until="load", timeout=_LOAD_TIMEOUT_MS)
    except PlaywrightError as exc:
        first = str(exc).strip().splitlines()[0][:200]
        raise ToolError(
            f"Could not load {url[:80]!r}: {first}. Check the URL, or try again later."
        ) from exc


def _view(handle_id: str, state: Tab) -> TabView:
    return TabView(tab_id=handle_id, url=state.url, title=state.title, can_go_back=state.index > 0)


def live_tabs(
    browser: Browser, kind: HandleKind[Tab], cap: int = 8, open_on_create: bool = True
) -> Live[Tab, Page]:
    """Pages behind tab handles, at most ``cap`` open in this process."""

    async def open_page(state: Tab) -> Page:
        context = await browser.new_context()
        try:
            if state.cookies:
                await context.add_cookies(state.cookies)  # type: ignore[arg-type]
            page = await context.new_page()
            await _goto(page, state.url)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await context.close()
            raise
        return page

    async def close_page(page: Page) -> None:
        await page.context.close()

    async def save(page: Page, state: Tab) -> None:
        state.url = page.url
        if 0 <= state.index < len(state.history):
            state.history[state.index] = page.url  # after redirects
        state.title = await page.title()
        state.cookies = [dict(cookie) for cookie in await page.context.cookies()]

    return Live(
        kind,
        Page,
        open=open_page,
        close=close_page,
        save=save,
        cap=cap,
        open_on_create=open_on_create,
    )


def build(
    browser: Browser,
    store: Store,
    *,
    secret_keys: str | list[str] | None = None,
    idle: float = DEFAULT_IDLE,
    cap: int = 8,
    open_on_create: bool = True,
) -> tuple[Server, Live[Tab, Page]]:
    """The tab server over ``store``, and its live pages (run them with ``running()``).

    Behind a gateway that routes on ``Mcp-Param-Tab-Id``, pass ``open_on_create=False``:
    ``open_tab`` then only checks and stores the URL, and the tab's first call opens
    the page on the replica the gateway sends that tab to.
    """
    kind = TAB if idle == DEFAULT_IDLE else tab_kind(idle)
    manager = HandleManager(store, [kind], secret_keys=secret_keys)
    pages = live_tabs(browser, kind, cap, open_on_create)
    server = Server(
        "browser-tabs",
        instructions="Open a tab with open_tab and pass its tab_id to the other tools.",
    )
    tools = HandleTools(server, manager, live=[pages])

    @tools.creates(kind)
    def open_tab(url: str) -> Tab:
        """Open a new browser tab at an http:// or https:// URL.

        Args:
            url: The page to load, such as https://example.com/.
        """
        url = _checked_url(url)
        return Tab(url=url, history=[url])

    @tools.edits(kind)
    async def navigate(tab_id: str, state: Tab, page: Page, url: str) -> TabView:
        """Load another URL in the tab; back returns to the page before.

        Args:
            url: The page to load, such as https://example.com/next.
        """
        url = _checked_url(url)
        await _goto(page, url)
        state.history = [*state.history[: state.index + 1], page.url]
        state.index = len(state.history) - 1
        state.url, state.title = page.url, await page.title()
        return _view(tab_id, state)

    @tools.edits(kind)
    async def back(tab_id: str, state: Tab, page: Page) -> TabView:
        """Go back to the page before in this tab's history."""
        if state.index == 0:
            raise ToolError(
                f"Tab {tab_id[:12]}… has no earlier page to go back to. "
                "Call navigate to load another URL."
            )
        state.index -= 1
        await _goto(page, state.history[state.index])
        state.url, state.title = page.url, await page.title()
        return _view(tab_id, state)

    @tools.reads(kind)
    async def read_page(page: Page) -> TabText:
        """The visible text of the tab's page (cut to 20,000 characters)."""
        text = await page.inner_text("body") if await page.query_selector("body") else ""
        return TabText(
            url=page.url,
            title=await page.title(),
            text=text[:MAX_TEXT],
            truncated=len(text) > MAX_TEXT,
        )

    @tools.reads(kind)
    async def screenshot(page: Page) -> ImageContent:
        """A PNG screenshot of what the tab shows."""
        return ImageContent(await page.screenshot(type="png"), "image/png")

    @tools.lists(kind)
    def list_tabs(tabs: list[Handle[Tab]]) -> TabList:
        """Your open tabs, oldest first, with their URLs and titles."""
        return TabList(tabs=[_view(tab.id, tab.state) for tab in tabs])

    @tools.closes(kind)
    def close_tab(tab_id: str, state: Tab) -> TabView:
        """Close the tab; its page is closed and its id stops working."""
        return _view(tab_id, state)

    return server, pages


@asynccontextmanager
async def launch_browser(executable: str = CHROMIUM) -> AsyncIterator[Browser]:
    """Headless Chromium from ``executable`` (Debian's ``chromium``), closed on exit."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=executable, args=CHROMIUM_FLAGS, headless=True
        )
        try:
            yield browser
        finally:
            with anyio.CancelScope(shield=True):
                await browser.close()


async def _serve(args: argparse.Namespace) -> None:
    from handles.transports.http import serve_http

    store: Store
    if args.redis:
        from stores.redis import RedisStore

        store = RedisStore.from_url(args.redis, namespace=args.namespace)
    else:
        store = MemoryStore()
    secret = os.environ.get("HANDLES_SECRET") or None
    async with store, launch_browser(args.chromium) as browser:
        server, pages = build(
            browser,
            store,
            secret_keys=secret,
            idle=args.idle,
            cap=args.cap,
            open_on_create=not args.open_on_first_use,
        )
        async with pages.running():
            await serve_http(server, host=args.host, port=args.port, log_level="warning")


def main(argv: list[str] | None = None) -> None:
    """Serve the tab tools over HTTP until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8010)
    parser.add_argument("--redis", default=os.environ.get("TABS_REDIS_URL", ""))
    parser.add_argument("--namespace", default="browser-tabs")
    parser.add_argument("--idle", type=float, default=DEFAULT_IDLE, help="seconds")
    parser.add_argument("--cap", type=int, default=8, help="open pages per process")
    parser.add_argument("--chromium", default=CHROMIUM)
    parser.add_argument(
        "--open-on-first-use",
        action="store_true",
        help="open a tab's page on its first call, not in open_tab (behind a gateway)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    anyio.run(_serve, args)


if __name__ == "__main__":
    main()
