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
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

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
from ._http_reply import (
    Receive,
    Reply,
    RequestHeaders,
    Scope,
    Send,
    drain_body,
    lifespan,
    reject,
    send_json,
    send_response,
)
from .auth import WELL_KNOWN, BearerAuth, Challenge, TokenVerifier

__all__ = [
    "DEFAULT_ALLOWED_HOSTS",
    "DEFAULT_ALLOWED_ORIGINS",
    "DEFAULT_MAX_BODY_BYTES",
    "HttpApp",
    "http_app",
    "serve_http",
]

logger = logging.getLogger("handles.transports.http")
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
_DRAIN_BYTES = 64 * 1024 * 1024
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
        replica: str | None = None,
    ) -> None:
        self.server, self.path, self.auth, self.principal = server, path, auth, principal
        self.pending = PendingRequests(replica)
        self.peers = LegacyPeers()
        self._hosts, self._origins = allowed_hosts, allowed_origins
        self._limit = max_body_bytes
        self._metadata_paths = {WELL_KNOWN, WELL_KNOWN + path.rstrip("/")}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "lifespan":
            await lifespan(receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = RequestHeaders(scope)
        declared = headers.get(b"content-length") or "0"
        if declared.isdigit() and int(declared) > _DRAIN_BYTES:
            await reject(send, 413, "Request Entity Too Large", _CLOSE)
            return
        screened = await self._screen_params(scope, headers)  # SEP-2243, before the body
        body = await drain_body(receive, self._limit, _DRAIN_BYTES)
        if not self._trusted(headers):
            await reject(send, 403, "Forbidden: this Host or Origin is not allowed")
        elif scope["path"] in self._metadata_paths and self.auth is not None:
            await self._metadata(scope, send)
        elif scope["path"] != self.path:
            await send_response(send, 404, b"Not Found", [(b"content-type", b"text/plain")])
        elif scope["method"] != "POST":
            await reject(send, 405, "Method Not Allowed: send JSON-RPC with POST", _ALLOW_POST)
        elif isinstance(body, int):
            close = _CLOSE if body > _DRAIN_BYTES else None
            await reject(send, 413, f"Request Entity Too Large: over {self._limit} bytes", close)
        else:
            await self._post(body, scope, headers, receive, send, screened)

    def _trusted(self, headers: RequestHeaders) -> bool:
        host, origin = headers.get(b"host"), headers.get(b"origin")
        return (host is None or self._hosts.allows(host)) and (
            origin is None or self._origins.allows(origin)
        )

    async def _metadata(self, scope: Scope, send: Send) -> None:
        assert self.auth is not None
        if scope["method"] in ("GET", "HEAD"):
            await send_response(send, 200, self.auth.metadata_document, _METADATA_HEADERS)
        else:
            await reject(send, 405, "Method Not Allowed: use GET", _ALLOW_GET)

    async def _screen_params(
        self, scope: Scope, headers: RequestHeaders
    ) -> tuple[Principal, str | None] | None:
        """Screen ``Mcp-Param-*`` headers before the body: the caller and any refusal.

        Only a trusted modern POST to the endpoint carrying such a header is screened;
        ``None`` leaves every other request, and a failed authentication, to ``_post``.
        A refused call is answered with the refusal as its ``isError`` result (the
        model must see what to fix: a mistyped id looks forged), once the body has
        been drained and parsed for its id and checked against the headers; the
        arguments are not validated and the tool does not run.
        """
        if (
            not self.server.header_screens
            or scope["path"] != self.path
            or scope["method"] != "POST"
            or (headers.get(b"mcp-protocol-version") or "").strip(" \t") not in MODERN_VERSIONS
            or not any(name.startswith(b"mcp-param-") for name, _ in scope["headers"])
            or not self._trusted(headers)
        ):
            return None
        principal = self.principal
        if self.auth is not None:
            outcome = await self.auth.authenticate(headers.get(b"authorization"))
            if isinstance(outcome, Challenge):
                return None
            principal = outcome
        return principal, _param_headers.screen(self.server, principal, scope["headers"])

    async def _post(
        self,
        body: bytes,
        scope: Scope,
        headers: RequestHeaders,
        receive: Receive,
        send: Send,
        screened: tuple[Principal, str | None] | None = None,
    ) -> None:
        principal, refusal = screened or (await self._caller(headers, send), None)
        if principal is None:
            return
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

    async def _caller(self, headers: RequestHeaders, send: Send) -> Principal | None:
        """The request's principal; ``None`` once a challenge has been sent."""
        if self.auth is None:
            return self.principal
        outcome = await self.auth.authenticate(headers.get(b"authorization"))
        if isinstance(outcome, Challenge):
            challenge = [_JSON, (b"www-authenticate", outcome.www_authenticate.encode())]
            await send_response(send, outcome.status, outcome.body, challenge)
            return None
        return outcome


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


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    logger.debug("the client closed the connection; cancelling its tool call")
    scope.cancel()


async def serve_http(
    server: Server,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "info",
    **app_options: Any,
) -> None:
    """Serve ``server`` over HTTP with uvicorn until interrupted (asyncio only).

    ``app_options`` are those of ``http_app``. With a ``verifier`` and no
    ``resource_url``, the resource URL is ``http://{host}:{port}{path}``.

    Raises:
        ImportError: uvicorn is not installed (``pip install mcp-handles[http]``).
    """
    try:
        import uvicorn
    except ImportError as exc:
        raise ImportError("serve_http needs uvicorn: install mcp-handles[http]") from exc
    if app_options.get("verifier") is not None and app_options.get("resource_url") is None:
        app_options["resource_url"] = f"http://{host}:{port}{app_options.get('path', '/mcp')}"
    app = http_app(server, **app_options)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="on")
    await uvicorn.Server(config).serve()
