"""The conformance suite's test tools, served over HTTP by our core.

Run ``python -m tests.mcp_conformance.server --port N`` (from the repository root);
the endpoint is ``http://127.0.0.1:N/mcp``. With ``--fd N`` it serves on an
inherited listening socket instead (what the conformance test does), and also at
``/run/<n>/mcp``, each such path as a principal of its own (``PerRun``).

The tools are the ones the suite's tool, transport and input-required scenarios
call, each answering as the scenario's description in
``@modelcontextprotocol/conformance`` asks.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import io
import json
import secrets
import socket
import wave
from collections.abc import Sequence
from typing import Annotated, Any

import anyio
from pydantic import Field

from handles.principal import Principal
from handles.server.content import (
    AudioContent,
    Content,
    EmbeddedResource,
    ImageContent,
    InputRequired,
    TextContent,
)
from handles.server.context import Context
from handles.server.dispatch import Server
from handles.server.jsonrpc import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY, ProtocolError
from handles.server.tools import X_MCP_HEADER, Tool, ToolError
from handles.transports.http import HttpApp, http_app, serve_http

__all__ = ["PerRun", "build_server", "main"]

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)
"""A 1x1 red pixel."""
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}
_KEY = secrets.token_bytes(32)


def sign(payload: dict[str, Any]) -> str:
    """An opaque, HMAC-protected ``requestState`` carrying ``payload``."""
    body = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode()
    tag = hmac.new(_KEY, body.encode(), hashlib.sha256).hexdigest()
    return f"{body}.{tag}"


def unsign(state: Any) -> dict[str, Any] | None:
    """The payload of a ``requestState`` made by ``sign``, or ``None`` if it was altered."""
    if not isinstance(state, str) or "." not in state:
        return None
    body, _, tag = state.rpartition(".")
    expected = hmac.new(_KEY, body.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(tag, expected):
        return None
    payload: dict[str, Any] = json.loads(base64.urlsafe_b64decode(body))
    return payload


def _wav() -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(2)
        audio.setframerate(8000)
        audio.writeframes(b"\x00\x00" * 8)
    return buffer.getvalue()


def _elicit(message: str, field: str, kind: str = "string") -> dict[str, Any]:
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    return {
        "method": "elicitation/create",
        "params": {"message": message, "requestedSchema": schema},
    }


def _sample(text: str, max_tokens: int) -> dict[str, Any]:
    message = {"role": "user", "content": {"type": "text", "text": text}}
    return {
        "method": "sampling/createMessage",
        "params": {"messages": [message], "maxTokens": max_tokens},
    }


ROOTS: dict[str, Any] = {"method": "roots/list", "params": {}}


def _accepted(ctx: Context, key: str) -> dict[str, Any] | None:
    """The content of an accepted elicitation answer under ``key``, if there is one."""
    answer = (ctx.input_responses or {}).get(key)
    if isinstance(answer, dict) and answer.get("action") == "accept":
        content = answer.get("content")
        return content if isinstance(content, dict) else {}
    return None


def _answer(ctx: Context, key: str) -> dict[str, Any] | None:
    answer = (ctx.input_responses or {}).get(key)
    return answer if isinstance(answer, dict) else None


def _state(ctx: Context) -> dict[str, Any]:
    """The verified state the client echoed (``{}`` for none); altered state is -32602."""
    if ctx.request_state is None:
        return {}
    payload = unsign(ctx.request_state)
    if payload is None:
        raise ProtocolError(INVALID_PARAMS, "Invalid requestState: the integrity check failed")
    return payload


def build_server() -> Server:
    """The conformance test server, with every tool the covered scenarios call."""
    server = Server("handles-conformance", "0.1.0", page_size=100)
    _add_content_tools(server)
    _add_diagnostic_tools(server)
    _add_input_required_tools(server)
    _add_header_tools(server)
    _add_client_request_tools(server)
    return server


Region = Annotated[str, Field(description="A region.", json_schema_extra={X_MCP_HEADER: "Region"})]
Priority = Annotated[int, Field(json_schema_extra={X_MCP_HEADER: "Priority"})]
Verbose = Annotated[bool, Field(json_schema_extra={X_MCP_HEADER: "Verbose"})]


def _add_header_tools(server: Server) -> None:
    @server.tool
    def test_param_header(
        region: Region, priority: Priority = 0, verbose: Verbose = False
    ) -> TextContent:
        """Echo the arguments that are mirrored into Mcp-Param-* headers (SEP-2243)."""
        return TextContent(f"region={region!r} priority={priority} verbose={verbose}")


def _add_content_tools(server: Server) -> None:
    @server.tool
    def test_simple_text() -> TextContent:
        """Return a simple text block."""
        return TextContent("This is a simple text response for testing.")

    @server.tool
    def test_image_content() -> ImageContent:
        """Return a 1x1 PNG image."""
        return ImageContent(PNG, "image/png")

    @server.tool
    def test_audio_content() -> AudioContent:
        """Return a short WAV clip."""
        return AudioContent(_wav(), "audio/wav")

    @server.tool
    def test_embedded_resource() -> EmbeddedResource:
        """Return an embedded text resource."""
        text = "This is an embedded resource content."
        return EmbeddedResource("test://embedded-resource", text=text, mime_type="text/plain")

    @server.tool
    def test_multiple_content_types() -> list[Content]:
        """Return text, an image and an embedded resource."""
        data = json.dumps({"test": "data", "value": 123})
        return [
            TextContent("Multiple content types test:"),
            ImageContent(PNG, "image/png"),
            EmbeddedResource(
                "test://mixed-content-resource", text=data, mime_type="application/json"
            ),
        ]

    @server.tool
    def test_error_handling() -> TextContent:
        """Always fail."""
        raise ToolError("This tool intentionally returns an error for testing")

    @server.tool
    async def test_tool_with_progress(ctx: Context) -> TextContent:
        """Report progress 0, 50 and 100 of 100, about 50 ms apart."""
        for step in (0, 50, 100):
            await ctx.report_progress(step, 100)
            if step < 100:
                await anyio.sleep(0.05)
        return TextContent("Progress test completed")

    def json_schema_2020_12_tool(
        name: str | None = None, phone: str | None = None, email: str | None = None
    ) -> TextContent:
        """Tool with JSON Schema 2020-12 features"""
        return TextContent(f"Contact recorded for {name or 'someone'}")

    tool = Tool.from_function(json_schema_2020_12_tool)
    tool.definition["inputSchema"] = JSON_SCHEMA_2020_12
    server.add_tool(tool)


def _add_diagnostic_tools(server: Server) -> None:
    @server.tool
    def test_missing_capability(ctx: Context) -> TextContent:
        """Needs the client's sampling capability (refused with -32021 without it)."""
        if "sampling" not in ctx.client_capabilities:
            data: dict[str, Any] = {"requiredCapabilities": {"sampling": {}}}
            raise ProtocolError(
                MISSING_REQUIRED_CLIENT_CAPABILITY, "This tool needs the sampling capability", data
            )
        return TextContent("The client declared sampling.")

    @server.tool
    def test_streaming_elicitation(ctx: Context) -> TextContent | InputRequired:
        """Ask for the user's name through an input-required result."""
        content = _accepted(ctx, "user_name")
        if content is None:
            return InputRequired({"user_name": _elicit("What is your name?", "name")})
        return TextContent(f"Hello, {content.get('name', 'stranger')}!")

    @server.tool
    def test_logging_tool() -> TextContent:
        """Do some work; logs nothing (no request asked for a log level)."""
        return TextContent("Logging tool completed without log messages")


def _add_input_required_tools(server: Server) -> None:
    @server.tool
    def test_input_required_result_elicitation(ctx: Context) -> TextContent | InputRequired:
        """Ask for the user's name, then greet them."""
        content = _accepted(ctx, "user_name")
        if content is None or not isinstance(content.get("name"), str):
            return InputRequired({"user_name": _elicit("What is your name?", "name")})
        return TextContent(f"Hello, {content['name']}!")

    @server.tool
    def test_input_required_result_sampling(ctx: Context) -> TextContent | InputRequired:
        """Ask the client's model a question, then return its answer."""
        answer = _answer(ctx, "capital_question")
        if answer is None:
            question = _sample("What is the capital of France?", 100)
            return InputRequired({"capital_question": question})
        content = answer.get("content")
        text = content.get("text") if isinstance(content, dict) else None
        return TextContent(f"The model said: {text}")

    @server.tool
    def test_input_required_result_list_roots(ctx: Context) -> TextContent | InputRequired:
        """Ask for the client's roots, then list them."""
        answer = _answer(ctx, "client_roots")
        if answer is None or not isinstance(answer.get("roots"), list):
            return InputRequired({"client_roots": ROOTS})
        uris = [r.get("uri") for r in answer["roots"] if isinstance(r, dict)]
        return TextContent(f"The client's roots: {', '.join(map(str, uris))}")

    @server.tool
    def test_input_required_result_request_state(ctx: Context) -> TextContent | InputRequired:
        """Ask for a confirmation with signed state; check the state comes back."""
        if _accepted(ctx, "confirm") is None or not _state(ctx).get("confirm"):
            request = _elicit("Please confirm", "ok", "boolean")
            return InputRequired({"confirm": request}, sign({"confirm": True}))
        return TextContent("state-ok: the request state was verified")

    @server.tool
    def test_input_required_result_tampered_state(ctx: Context) -> TextContent | InputRequired:
        """Like the request-state tool; altered state is refused with -32602."""
        if _accepted(ctx, "confirm") is None or not _state(ctx).get("confirm"):
            request = _elicit("Please confirm", "ok", "boolean")
            return InputRequired({"confirm": request}, sign({"confirm": True}))
        return TextContent("state-ok")

    @server.tool
    def test_input_required_result_multiple_inputs(ctx: Context) -> TextContent | InputRequired:
        """Ask for a name, a model's greeting and the roots at once."""
        keys = ("user_name", "greeting", "client_roots")
        if _state(ctx).get("round") != 1 or any(_answer(ctx, k) is None for k in keys):
            requests = {
                "user_name": _elicit("What is your name?", "name"),
                "greeting": _sample("Generate a greeting", 50),
                "client_roots": ROOTS,
            }
            return InputRequired(requests, sign({"round": 1}))
        return TextContent("All three inputs received")

    @server.tool
    def test_input_required_result_multi_round(ctx: Context) -> TextContent | InputRequired:
        """Ask for a name, then a colour, each round with new signed state."""
        round = _state(ctx).get("round", 0)
        if round == 1 and _accepted(ctx, "step1") is not None:
            step2 = _elicit("Step 2: What is your favorite color?", "color")
            return InputRequired({"step2": step2}, sign({"round": 2}))
        if round == 2 and _accepted(ctx, "step2") is not None:
            return TextContent("Both steps complete")
        step1 = _elicit("Step 1: What is your name?", "name")
        return InputRequired({"step1": step1}, sign({"round": 1}))

    @server.tool
    def test_input_required_result_capabilities(ctx: Context) -> TextContent | InputRequired:
        """Ask only for what the client declared it can answer."""
        declared = ctx.client_capabilities
        requests: dict[str, Any] = {}
        if "elicitation" in declared:
            requests["user_name"] = _elicit("What is your name?", "name")
        if "sampling" in declared:
            requests["greeting"] = _sample("Generate a greeting", 50)
        if "roots" in declared:
            requests["client_roots"] = ROOTS
        if not requests or all(_answer(ctx, k) is not None for k in requests):
            return TextContent("Nothing more to ask")
        return InputRequired(requests)


SEP1034_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {
            "type": "string",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "default": True},
    },
}
"""A form with a default for every primitive type (SEP-1034)."""


def _choices(*titled: tuple[str, str]) -> list[dict[str, str]]:
    return [{"const": value, "title": title} for value, title in titled]


SEP1330_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": _choices(
                ("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")
            ),
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": _choices(
                    ("value1", "First Choice"),
                    ("value2", "Second Choice"),
                    ("value3", "Third Choice"),
                )
            },
        },
    },
}
"""Every enum form SEP-1330 defines: untitled, titled, legacy titled, and both multi-selects."""


def _add_client_request_tools(server: Server) -> None:
    """The legacy-era tools that log to the client or send it requests during the call."""

    @server.tool
    async def test_tool_with_logging(ctx: Context) -> TextContent:
        """Log three info messages about 50 ms apart (sent only if the client asked)."""
        await ctx.info("Tool execution started")
        await anyio.sleep(0.05)
        await ctx.info("Tool processing data")
        await anyio.sleep(0.05)
        await ctx.info("Tool execution completed")
        return TextContent("Logging test completed")

    @server.tool
    async def test_sampling(prompt: str, ctx: Context) -> TextContent:
        """Ask the client's model to answer the prompt."""
        answer = await ctx.sample(prompt, max_tokens=100)  # NotSupported: an isError result
        return TextContent(f"LLM response: {answer.text}")

    @server.tool
    async def test_elicitation(message: str, ctx: Context) -> TextContent:
        """Ask the user for a username and an email address."""
        schema = {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }
        answer = await ctx.elicit(message, schema)
        return TextContent(f"User response: action={answer.action}, content={answer.content}")

    @server.tool
    async def test_elicitation_sep1034_defaults(ctx: Context) -> TextContent:
        """Ask for a form whose every field has a default (SEP-1034)."""
        answer = await ctx.elicit("Please review and update the form fields", SEP1034_SCHEMA)
        content = json.dumps(answer.content)
        return TextContent(f"Elicitation completed: action={answer.action}, content={content}")

    @server.tool
    async def test_elicitation_sep1330_enums(ctx: Context) -> TextContent:
        """Ask for a form with every enum variant (SEP-1330)."""
        answer = await ctx.elicit("Please select your options", SEP1330_SCHEMA)
        content = json.dumps(answer.content)
        return TextContent(f"Elicitation completed: action={answer.action}, content={content}")


class PerRun:
    """``server`` at ``/mcp``, and at ``/run/<n>/mcp`` as principal ``conformance-run-<n>``.

    A stateless endpoint keeps a 2025-era client's handshake (its capabilities,
    the level of its ``logging/setLevel``) by principal, and the suite sends no
    token. The test runs four scenarios at once: served as one principal, one
    run's ``initialize`` started that principal's handshake afresh between another
    run's ``logging/setLevel`` and its ``tools/call``, which then logged nothing
    (tools-call-with-logging failed once in 14 runs). A path per run keeps each
    run's handshake its own, as a token per client would.
    """

    def __init__(self, server: Server) -> None:
        self._server = server
        self._apps: dict[str, HttpApp] = {"/mcp": http_app(server)}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "/mcp") if scope["type"] == "http" else "/mcp"
        app = self._apps.get(path)
        if app is None:
            run = path.removeprefix("/run/").removesuffix("/mcp")
            if path == f"/run/{run}/mcp" and run.isdigit() and len(run) <= 6:
                principal = Principal(f"conformance-run-{run}")
                app = self._apps[path] = http_app(self._server, path=path, principal=principal)
            else:
                app = self._apps["/mcp"]  # answers 404 for a path it does not serve
        await app(scope, receive, send)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.mcp_conformance.server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8010)
    parser.add_argument("--fd", type=int, help="serve on this inherited, listening socket")
    options = parser.parse_args(argv)
    server = build_server()
    if options.fd is None:
        anyio.run(lambda: serve_http(server, host=options.host, port=options.port))
        return
    import uvicorn

    sock = socket.socket(fileno=options.fd)
    config = uvicorn.Config(PerRun(server), log_level="warning", ws="none")
    anyio.run(uvicorn.Server(config).serve, [sock])


if __name__ == "__main__":
    main()
