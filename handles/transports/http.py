"""Streamable HTTP: the MCP server as a plain ASGI app, for both protocol eras.

``http_app(server)`` answers ``POST <path>`` and mounts in any ASGI server or
framework; ``serve_http(server)`` runs it with uvicorn (the ``http`` extra).
It is stateless: every request gets a fresh ``Connection`` and no session id.
The ``MCP-Protocol-Version`` header picks the era of each request. Replies are
JSON, or SSE for a request whose tool reports progress or logs; a client that
closes that stream (or leaves before it starts) cancels the tool.

In the 2025 era a tool may ask the client (elicitation, sampling): the request
goes out on the ``tools/call`` POST's SSE stream and the client answers with a
new POST, which this app hands to the waiting call by the request's id. The
answer must reach the replica that asked (and the ``initialize`` that declared
the capability, the same replica): see ``docs/context.md``.

A request is judged by its head (``HttpApp._refusal``, then the bearer token)
before any of its body is read; a refusal closes the connection unread. Reading a
body is bounded per request (``max_body_bytes``, ``body_timeout``) and across all
requests (``max_buffered_bytes``); ``serve_http`` and ``uvicorn_config`` add a
connection cap and a header deadline (see docs/http.md for the memory bound).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import anyio

from ..principal import Principal
from ..server.client_requests import PendingRequests
from ..server.dispatch import Connection, Server
from ..server.jsonrpc import INVALID_REQUEST, Message, ProtocolError, error_response, parse
from ..server.protocol import MODERN_VERSIONS
from . import _param_headers
from ._http_checks import (
    DEFAULT_ALLOWED_HOSTS,
    DEFAULT_ALLOWED_ORIGINS,
    AllowList,
    accepted,
    check_modern_headers,
    request_era,
    status_for,
)
from ._http_peers import LegacyPeers

if TYPE_CHECKING:
    from ._uvicorn import Parser
from ._http_reply import (
    Receive,
    Reply,
    RequestHeaders,
    Scope,
    Send,
    lifespan,
    reject,
    send_json,
    send_response,
)
from .auth import WELL_KNOWN, BearerAuth, Challenge, TokenVerifier

__all__ = [
    "DEFAULT_ALLOWED_HOSTS",
    "DEFAULT_ALLOWED_ORIGINS",
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_KEEP_ALIVE_TIMEOUT",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_BUFFERED_BYTES",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_HEADER_BYTES",
    "HttpApp",
    "endpoint_url",
    "http_app",
    "serve_http",
    "uvicorn_config",
]

logger = logging.getLogger("handles.transports.http")
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""The largest request body served; larger ones get 413."""
DEFAULT_MAX_BUFFERED_BYTES = 64 * 1024 * 1024
"""Request-body bytes held at once across all requests; past it, requests get 503."""
DEFAULT_BODY_TIMEOUT = 10.0
"""Seconds a client has to send a request body, once its head has arrived."""
SMALL_BODY_BYTES = 64 * 1024
"""Bodies up to this size may use the last quarter of ``max_buffered_bytes``."""
_SINGLE_HEADERS = (b"host", b"origin", b"authorization", b"content-type", b"content-length")
_SHOWN_CHARS = 60
_ALLOW_POST = [(b"allow", b"POST")]
_ALLOW_GET = [(b"allow", b"GET")]
_CLOSE = [(b"connection", b"close")]
_JSON = (b"content-type", b"application/json")
_METADATA_HEADERS = [_JSON, (b"cache-control", b"public, max-age=3600")]


def http_app(
    server: Server,
    *,
    path: str = "/mcp",
    verifier: TokenVerifier | None = None,
    resource_url: str | None = None,
    authorization_servers: Iterable[str] = (),
    required_scopes: Iterable[str] = (),
    allowed_hosts: Iterable[str] = DEFAULT_ALLOWED_HOSTS,
    allowed_origins: Iterable[str] = DEFAULT_ALLOWED_ORIGINS,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    principal: Principal | None = None,
    replica: str | None = None,
) -> HttpApp:
    """The ASGI app serving ``server`` at ``path``.

    Args:
        server: The MCP server.
        path: The endpoint's path.
        verifier: Checks bearer tokens; each request is then served as the
            token's principal. Without one, every request is ``principal``.
        resource_url: This endpoint's public URL, the audience tokens must be
            issued for; required with ``verifier``.
        authorization_servers: Where clients get tokens (RFC 9728 metadata).
        required_scopes: Scopes every request's token must carry (else 403).
        allowed_hosts: ``Host`` values served; an entry without a port allows
            any port, ``"*"`` allows all. Others get 403 (DNS rebinding).
        allowed_origins: ``Origin`` values served (same syntax); requests
            without an ``Origin`` (not from a browser) are always served.
        max_body_bytes: Larger request bodies get 413.
        max_buffered_bytes: The request-body bytes held at once across all
            requests; a request that would pass it gets 503 and the connection
            is closed. With ``max_body_bytes`` it bounds what bodies can cost. Its
            last quarter is kept for bodies of at most 64 KiB.
        body_timeout: Seconds a client has to send its body once the head has
            arrived; a slower one gets 408 and the connection is closed.
        principal: The caller when there is no verifier; by default
            ``Principal.from_environment()``.
        replica: This replica's name, the prefix of the ids of its requests to
            clients (so an answer that reached the wrong replica is told apart);
            random by default.

    Raises:
        ValueError: ``verifier`` without an absolute ``resource_url``.
    """
    auth = None
    if verifier is not None:
        if resource_url is None:
            raise ValueError("http_app(verifier=...) needs resource_url, this endpoint's URL")
        auth = BearerAuth(
            verifier, resource_url, tuple(authorization_servers), tuple(required_scopes)
        )
    return HttpApp(
        server,
        path=path,
        auth=auth,
        allowed_hosts=AllowList(allowed_hosts),
        allowed_origins=AllowList(allowed_origins),
        max_body_bytes=max_body_bytes,
        max_buffered_bytes=max_buffered_bytes,
        body_timeout=body_timeout,
        principal=principal or Principal.from_environment(),
        replica=replica,
    )


class HttpApp:
    """The ASGI application ``http_app`` builds; see there for the options."""

    def __init__(
        self,
        server: Server,
        *,
        path: str,
        auth: BearerAuth | None,
        allowed_hosts: AllowList,
        allowed_origins: AllowList,
        max_body_bytes: int,
        principal: Principal,
        max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES,
        body_timeout: float = DEFAULT_BODY_TIMEOUT,
        replica: str | None = None,
    ) -> None:
        if not 0 < max_body_bytes <= max_buffered_bytes:
            raise ValueError(
                f"need 0 < max_body_bytes <= max_buffered_bytes, got {max_body_bytes} "
                f"and {max_buffered_bytes}"
            )
        if body_timeout <= 0:
            raise ValueError(f"body_timeout must be positive, got {body_timeout}")
        self.server, self.path, self.auth, self.principal = server, path, auth, principal
        self.pending = PendingRequests(replica)
        self.peers = LegacyPeers()
        self._hosts, self._origins = allowed_hosts, allowed_origins
        self._limit = max_body_bytes
        self._budget = _Budget(max_buffered_bytes)
        self.body_timeout = body_timeout
        self.server_times_bodies = False
        """Set by ``uvicorn_config``: the guarded protocol enforces ``body_timeout``
        itself (a timer per connection), so a request skips its own cancel scope,
        which cost 15% of the server's CPU per request."""
        self._metadata_paths = {WELL_KNOWN, WELL_KNOWN + path.rstrip("/")}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "lifespan":
            await lifespan(receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = RequestHeaders(scope)
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            status, text, extra = refusal
            close = _CLOSE if headers.may_have_body() else []
            await reject(send, status, text, [*extra, *close])
        elif scope["path"] in self._metadata_paths and self.auth is not None:
            await self._metadata(scope, send)
        elif scope["path"] != self.path:
            close = _CLOSE if headers.may_have_body() else []
            await send_response(send, 404, b"Not Found", [(b"content-type", b"text/plain"), *close])
        else:
            principal = await self._caller(headers, send)
            if principal is not None:
                screened = self._screen_params(scope, headers, principal)  # SEP-2243
                await self._post(principal, scope, headers, receive, send, screened)

    def _refusal(self, scope: Scope, headers: RequestHeaders) -> _Refusal | None:
        """What is wrong with a request's head, checked before any of its body is read.

        The status, the text and extra headers of the refusal, or ``None`` when the
        head is fine (the bearer token is checked next, then the body is read).
        """
        repeated = headers.repeated(_SINGLE_HEADERS)
        if repeated is not None:
            name = repeated.decode("latin-1")
            return 400, f"Bad Request: the {name} header was sent more than once; send it once", []
        host, origin = headers.get(b"host"), headers.get(b"origin")
        if host is None:
            return 400, "Bad Request: the request has no Host header; HTTP/1.1 requires one", []
        if not self._hosts.allows(host):
            return 403, f"Forbidden: the Host {_shown(host)} is not allowed (DNS rebinding)", []
        if origin is not None and not self._origins.allows(origin):
            return 403, f"Forbidden: the Origin {_shown(origin)} is not allowed", []
        if scope["path"] != self.path or (
            scope["path"] in self._metadata_paths and self.auth is not None
        ):
            return None  # answered without a body: metadata, or 404
        if scope["method"] != "POST":
            return 405, "Method Not Allowed: send JSON-RPC with POST", _ALLOW_POST
        content_type = headers.get(b"content-type")
        if content_type is None or not _is_json(content_type):
            shown = "none" if content_type is None else _shown(content_type)
            return 415, f"Unsupported Media Type: {shown}; send Content-Type: application/json", []
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self._limit:
            text = f"Content Too Large: {_shown(declared)} bytes, over the {self._limit}-byte limit"
            return 413, text, []
        return None

    async def _metadata(self, scope: Scope, send: Send) -> None:
        assert self.auth is not None
        if scope["method"] in ("GET", "HEAD"):
            await send_response(send, 200, self.auth.metadata_document, _METADATA_HEADERS)
        else:
            await reject(send, 405, "Method Not Allowed: use GET", _ALLOW_GET)

    def _screen_params(
        self, scope: Scope, headers: RequestHeaders, principal: Principal
    ) -> str | None:
        """Screen ``Mcp-Param-*`` headers before the body; the refusal, if any.

        Only a modern POST to the endpoint carrying such a header is screened (the
        head checks and the token have passed). A refused call is answered with the
        refusal as its ``isError`` result (the model must see what to fix: a
        mistyped id looks forged), once the body has been read and parsed for its id
        and checked against the headers; the arguments are not validated and the
        tool does not run.
        """
        if (
            not self.server.header_screens
            or (headers.get(b"mcp-protocol-version") or "").strip(" \t") not in MODERN_VERSIONS
            or not any(name.startswith(b"mcp-param-") for name, _ in scope["headers"])
        ):
            return None
        return _param_headers.screen(self.server, principal, scope["headers"])

    async def _post(
        self,
        principal: Principal,
        scope: Scope,
        headers: RequestHeaders,
        receive: Receive,
        send: Send,
        refusal: str | None = None,
    ) -> None:
        try:
            body = await self._read_body(receive)
        except _BodyRefused as refused:
            await reject(send, refused.status, refused.text, [*refused.headers, *_CLOSE])
            return
        if body is None:
            return  # the client left
        try:
            await self._serve(body, principal, scope, headers, receive, send, refusal)
        finally:
            self._budget.release(len(body))

    async def _serve(
        self,
        body: bytes,
        principal: Principal,
        scope: Scope,
        headers: RequestHeaders,
        receive: Receive,
        send: Send,
        refusal: str | None,
    ) -> None:
        accept = accepted(headers.get(b"accept"))
        if not (accept.json or accept.sse):
            await reject(send, 406, "Not Acceptable: accept application/json or text/event-stream")
            return
        try:
            message = parse(body, responses=True)
            if "method" not in message:
                await self._answer(message, principal, send)
                return
            era, version = request_era(headers.get(b"mcp-protocol-version"), message)
            if era == "modern":
                method, name = headers.get(b"mcp-method"), headers.get(b"mcp-name")
                check_modern_headers(message, version, method, name)
                _param_headers.check(self.server, message, scope["headers"])
        except ProtocolError as exc:
            await send_json(send, 400, error_response(exc.id, exc))
            return
        if "id" not in message:
            if message["method"] == "notifications/cancelled":  # of a request we sent?
                self.pending.cancel(message["params"].get("requestId"), principal)
            await send_response(send, 202)
            return
        connection = Connection(principal, era, version)
        connection.refusal = refusal
        asks = False
        if era == "legacy":
            self.peers.load(principal, connection)
            if accept.sse:
                connection.pending = self.pending
                asks = message["method"] == "tools/call" and self.peers.asks(principal)
        reply = Reply(send, json=accept.json, sse=accept.sse, encode=self.server.encode)
        if accept.sse and (asks or _wants_progress(message)):
            response = await _cancellable(self.server, message, connection, reply, receive)
        else:
            response = await self.server.handle(message, connection, reply.notify)
        if era == "legacy" and response is not None and "result" in response:
            self.peers.save(message["method"], principal, connection)
        if response is not None:
            await reply.finish(status_for(response, era), response)

    async def _answer(self, message: Message, principal: Principal, send: Send) -> None:
        """A client's answer to a request this server sent: to the call that waits, 202."""
        if self.pending.answer(message, principal):
            await send_response(send, 202)
            return
        if self.pending.is_ours(message):
            text = "the request this answers is no longer waiting (it timed out or was cancelled)"
        else:
            text = (
                "no request with this id is waiting on this server; an answer must reach the "
                "replica that sent the request"
            )
        error = ProtocolError(INVALID_REQUEST, f"Invalid Request: {text}")
        await send_json(send, 400, error_response(None, error))

    async def _read_body(self, receive: Receive) -> bytes | None:
        """The whole body, counted against the budget; ``None`` if the client left.

        Raises ``_BodyRefused`` (having released what it took) when the body is
        too large, would pass the budget, or is not all there within the deadline.
        """
        chunks: list[bytes] = []
        size = 0
        kept = False
        try:
            with _deadline(None if self.server_times_bodies else self.body_timeout):
                while True:
                    event = await receive()
                    if event["type"] != "http.request":
                        return None
                    chunk: bytes = event.get("body", b"")
                    if size + len(chunk) > self._limit:
                        text = f"Content Too Large: the body passed the {self._limit}-byte limit"
                        raise _BodyRefused(413, text)
                    if not self._budget.take(len(chunk), size + len(chunk)):
                        raise _BodyRefused(
                            503,
                            "Service Unavailable: the server holds its maximum of "
                            f"{self._budget.limit} bytes of request bodies; retry shortly",
                            [(b"retry-after", b"1")],
                        )
                    size += len(chunk)
                    chunks.append(chunk)
                    if not event.get("more_body", False):
                        kept = True  # the caller releases it once the request is done
                        return b"".join(chunks)
        except TimeoutError:
            text = f"Request Timeout: the body did not arrive within {self.body_timeout:g} s"
            raise _BodyRefused(408, text) from None
        finally:
            if not kept:  # refused, abandoned or cancelled: give the bytes back
                self._budget.release(size)

    async def _caller(self, headers: RequestHeaders, send: Send) -> Principal | None:
        """The request's principal; ``None`` once a challenge has been sent."""
        if self.auth is None:
            return self.principal
        outcome = await self.auth.authenticate(headers.get(b"authorization"))
        if isinstance(outcome, Challenge):
            challenge = [_JSON, (b"www-authenticate", outcome.www_authenticate.encode())]
            if headers.may_have_body():
                challenge.append(_CLOSE[0])
            await send_response(send, outcome.status, outcome.body, challenge)
            return None
        return outcome


_Refusal = tuple[int, str, list[tuple[bytes, bytes]]]


class _BodyRefused(Exception):
    def __init__(
        self, status: int, text: str, headers: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        self.status, self.text, self.headers = status, text, headers or []


class _Budget:
    """Request-body bytes held across all requests of one app, against a limit.

    The last quarter of it is kept for small bodies (up to ``SMALL_BODY_BYTES``, the
    size of nearly every MCP request): clients stalling large bodies cannot take it
    all, so small requests are still served while they wait out ``body_timeout``.
    """

    __slots__ = ("held", "large_limit", "limit")

    def __init__(self, limit: int) -> None:
        self.limit, self.held = limit, 0
        self.large_limit = limit - limit // 4

    def take(self, size: int, total: int) -> bool:
        """Take ``size`` more bytes for a body that will then hold ``total``."""
        ceiling = self.limit if total <= SMALL_BODY_BYTES else self.large_limit
        if self.held + size > ceiling:
            return False
        self.held += size
        return True

    def release(self, size: int) -> None:
        self.held -= size


def _is_json(content_type: str) -> bool:
    media_type = content_type.partition(";")[0].strip().lower()
    return media_type == "application/json"


def _shown(value: str) -> str:
    """A header value for a refusal text: quoted, and cut to a few dozen characters."""
    cut = value[:_SHOWN_CHARS] + ("…" if len(value) > _SHOWN_CHARS else "")
    return repr(cut)


def _wants_progress(message: Message) -> bool:
    meta = message["params"].get("_meta")
    return isinstance(meta, dict) and meta.get("progressToken") is not None


async def _cancellable(
    server: Server, message: Message, connection: Connection, reply: Reply, receive: Receive
) -> Message | None:
    """Handle a request whose reply may stream; ``None`` if the client left (it is cancelled).

    Only these requests watch for a disconnect: a watcher task costs more than a
    whole small request, and a JSON reply has no stream for the client to close.
    """
    response: Message | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(_cancel_on_disconnect, receive, tg.cancel_scope)
        response = await server.handle(message, connection, reply.notify)
        tg.cancel_scope.cancel()
    return response


def _deadline(seconds: float | None) -> contextlib.AbstractContextManager[object]:
    """``fail_after(seconds)``; nothing when the server bounds the time itself."""
    return contextlib.nullcontext() if seconds is None else anyio.fail_after(seconds)


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    logger.debug("the client closed the connection; cancelling its tool call")
    scope.cancel()


DEFAULT_MAX_CONNECTIONS = 512
"""Connections ``serve_http`` holds open at once; more are answered 503 and closed."""
DEFAULT_HEADER_TIMEOUT = 10.0
"""Seconds a client has to send a whole request head (from connecting, or the last reply)."""
DEFAULT_KEEP_ALIVE_TIMEOUT = 5
"""Seconds an idle keep-alive connection stays open (uvicorn's ``timeout_keep_alive``)."""
DEFAULT_MAX_HEADER_BYTES = 16 * 1024
"""The largest request head (uvicorn's ``h11_max_incomplete_event_size``); larger get 400."""


async def serve_http(
    server: Server,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "info",
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    keep_alive_timeout: int = DEFAULT_KEEP_ALIVE_TIMEOUT,
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
    parser: Parser = "auto",
    **app_options: Any,
) -> None:
    """Serve ``server`` over HTTP with uvicorn until interrupted (asyncio only).

    ``app_options`` are those of ``http_app``. With a ``verifier`` and no
    ``resource_url``, the resource URL is ``http://{host}:{port}{path}`` (an IPv6
    host in brackets). The other options bound what slow or hostile clients can
    hold (see docs/http.md for the formula):

    Args:
        max_connections: Connections held open at once; one more is answered
            503 and closed at once.
        header_timeout: Seconds a client has to send a whole request head; a
            slower one gets 408 and is closed.
        keep_alive_timeout: Seconds an idle keep-alive connection stays open.
        max_header_bytes: The largest request head; a larger one gets 400.
        parser: The HTTP/1.1 parser: ``"auto"`` (httptools when installed, as it
            is with the ``http`` extra, else h11), ``"httptools"`` or ``"h11"``.
            Both are held to the same bounds.

    Raises:
        ImportError: uvicorn is not installed (``pip install mcp-handles[http]``).
    """
    try:
        import uvicorn
    except ImportError as exc:
        raise ImportError("serve_http needs uvicorn: install mcp-handles[http]") from exc
    if app_options.get("verifier") is not None and app_options.get("resource_url") is None:
        app_options["resource_url"] = endpoint_url(host, port, app_options.get("path", "/mcp"))
    app = http_app(server, **app_options)
    config = uvicorn_config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        max_connections=max_connections,
        header_timeout=header_timeout,
        keep_alive_timeout=keep_alive_timeout,
        max_header_bytes=max_header_bytes,
        parser=parser,
    )
    await uvicorn.Server(config).serve()


def uvicorn_config(
    app: Any,
    *,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    keep_alive_timeout: int = DEFAULT_KEEP_ALIVE_TIMEOUT,
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
    parser: Parser = "auto",
    **options: Any,
) -> Any:
    """A ``uvicorn.Config`` serving ``app`` with the bounds of ``serve_http``.

    For running uvicorn yourself (``uvicorn.Server(config).serve(sockets)``);
    ``options`` go to ``uvicorn.Config`` (``host``, ``port``, ``log_level``...).
    ``app`` is an ``HttpApp``, whose ``body_timeout`` the protocol then enforces
    (one timer per connection rather than a cancel scope per request), or any ASGI
    app wrapping one, which keeps timing its bodies itself.
    """
    import uvicorn

    from ._uvicorn import guarded_protocol

    protocol = guarded_protocol(
        max_connections=max_connections,
        header_timeout=header_timeout,
        max_header_bytes=max_header_bytes,
        # An HttpApp's body deadline moves into the protocol; a wrapped app keeps its own.
        body_timeout=app.body_timeout if isinstance(app, HttpApp) else None,
        parser=parser,
    )
    if isinstance(app, HttpApp):
        app.server_times_bodies = True
    options.setdefault("lifespan", "on")
    return uvicorn.Config(
        app,
        http=protocol,
        ws="none",
        timeout_keep_alive=keep_alive_timeout,
        h11_max_incomplete_event_size=max_header_bytes,
        **options,
    )


def endpoint_url(host: str, port: int, path: str = "/mcp", scheme: str = "http") -> str:
    """The URL of an endpoint served on ``host``: ``http://[::1]:8000/mcp`` for IPv6."""
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}{path}"
