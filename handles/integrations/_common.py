"""What both adapters do alike: the tool function a framework registers for a verb."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import HandleError, ToolError
from ..principal import Principal
from ..verbs import Verb

__all__ = ["ToolNames", "local_principal", "tool_function"]

ToolNames = Callable[[str], str | None]


@functools.cache
def local_principal() -> Principal:
    """The stdio caller, read once: ``Principal.from_environment()``."""
    return Principal.from_environment()


def tool_function(
    verb: Verb,
    caller: Callable[[], Principal],
    refuse: Callable[[str], Any],
    tool_names: Callable[[str], Awaitable[ToolNames]],
) -> Callable[..., Awaitable[Any]]:
    """An ``async def`` with the verb's signature that runs it for ``caller()``.

    A ``HandleError`` (with hints naming only the tools ``tool_names(verb.name)``
    finds) or a
    ``ToolError`` the handler raises becomes ``refuse(text)``: what the framework
    needs to show the model that text and nothing else. Both ``__signature__`` and
    ``__annotations__`` are set: FastMCP reads type hints, the SDK the signature.
    """
    run, name = verb.run, verb.name

    async def call(**arguments: Any) -> Any:
        try:
            return await run(caller(), arguments)
        except HandleError as error:
            return refuse(error.text(await tool_names(name)))
        except ToolError as error:
            return refuse(str(error))

    call.__signature__ = verb.signature  # type: ignore[attr-defined]
    call.__annotations__ = verb.tool_annotations
    call.__name__ = call.__qualname__ = verb.name
    call.__doc__ = verb.description
    call.__module__ = getattr(verb.handler, "__module__", __name__)
    return call
