"""``Context``: what a tool may know about the request it serves.

Declare a parameter annotated ``Context`` (or ``Principal``) and the server
passes it in; such parameters are never part of the tool's input schema.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..principal import Principal
from .protocol import Era, RequestMeta

__all__ = ["Context"]

Notify = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass(slots=True)
class Context:
    """The caller, the request's protocol details, and a way to report progress."""

    principal: Principal
    tool_name: str
    request_id: str | int
    meta: RequestMeta
    input_responses: dict[str, Any] | None = None
    request_state: str | None = None
    _notify: Notify | None = None

    @property
    def era(self) -> Era:
        return self.meta.era

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The capabilities this request declared (always ``{}`` in the legacy era)."""
        return self.meta.client_capabilities

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress``, if the request asked for progress."""
        token = self.meta.progress_token
        if token is None or self._notify is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._notify({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
