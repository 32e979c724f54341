"""Handle kinds: a name, a prefix, a state model and a lifetime policy.

A kind says what its handles look like (``bsk_…``), what state they carry, how long
they live and which tools create and list them, so that every error about a basket
can name the tool that fixes it. ``Lifetime`` renders the sentence that belongs in
the creating tool's description.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, Field, create_model

__all__ = ["MAX_ID_CHARS", "X_MCP_HEADER", "HandleKind", "Lifetime", "humanize_duration", "iso_utc"]

S = TypeVar("S", bound=BaseModel)

#: The longest id a tool accepts (ids are 47 characters for a 3-letter prefix).
MAX_ID_CHARS = 256
#: The JSON Schema keyword (SEP-2243) that publishes a parameter as ``Mcp-Param-<name>``.
X_MCP_HEADER = "x-mcp-header"

_NAME = re.compile(r"[a-z][a-z0-9_]*")
_PREFIX = re.compile(r"[a-z][a-z0-9]{1,7}")
_HEADER = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,63}")
# Largest unit first; days only from two days on, so a day reads "24 hours".
_UNITS = ((86400, "day", 2), (3600, "hour", 1), (60, "minute", 1), (1, "second", 1))


def humanize_duration(seconds: float) -> str:
    """Write a duration in the largest unit that divides it exactly.

    Days are used only from two days on, so ``86400`` reads "24 hours" and
    ``172800`` reads "2 days"; ``5400`` reads "90 minutes".

    Args:
        seconds: A positive number of seconds.

    Returns:
        A phrase such as "30 minutes", "1 hour" or "45 seconds".
    """
    for size, unit, least in _UNITS:
        count, rest = divmod(seconds, size)
        if not rest and count >= least:
            return f"{int(count)} {unit}{'' if count == 1 else 's'}"
    return f"{seconds:g} seconds"


def iso_utc(timestamp: float) -> str:
    """Unix seconds as ISO 8601 UTC with seconds precision: ``2026-11-29T23:59:00Z``."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _seconds(value: float | timedelta | None, what: str) -> float | None:
    if value is None:
        return None
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if not seconds > 0:
        raise ValueError(f"the {what} lifetime must be positive, got {value!r}")
    return seconds


@dataclass(frozen=True, slots=True, init=False)
class Lifetime:
    """How long a handle lives: an idle timeout, an absolute lifetime, or both.

    The idle timeout is renewed on every use; the absolute lifetime, counted from
    creation, is never exceeded. Both are stored as seconds.

    Args:
        idle: Expire after this long without use (seconds or a ``timedelta``).
        absolute: Expire this long after creation, however busy.

    Raises:
        ValueError: Neither is given, one is not positive, or idle exceeds absolute.
    """

    idle: float | None
    absolute: float | None

    def __init__(
        self,
        *,
        idle: float | timedelta | None = None,
        absolute: float | timedelta | None = None,
    ) -> None:
        idle_s, absolute_s = _seconds(idle, "idle"), _seconds(absolute, "absolute")
        if idle_s is None and absolute_s is None:
            raise ValueError("a lifetime needs an idle timeout, an absolute lifetime, or both")
        if idle_s is not None and absolute_s is not None and idle_s > absolute_s:
            raise ValueError("the idle timeout cannot be longer than the absolute lifetime")
        object.__setattr__(self, "idle", idle_s)
        object.__setattr__(self, "absolute", absolute_s)

    def deadline(self, created_at: float, now: float) -> float:
        """When a handle created at ``created_at`` and used at ``now`` expires."""
        idle_end = math.inf if self.idle is None else now + self.idle
        hard_end = math.inf if self.absolute is None else created_at + self.absolute
        return min(idle_end, hard_end)

    def absolute_deadline(self, created_at: float) -> float | None:
        """The hard deadline of a handle created at ``created_at``, if there is one."""
        return None if self.absolute is None else created_at + self.absolute

    def describe(self, plural: str) -> str:
        """The policy as a clause: "baskets expire after 30 minutes without use"."""
        parts = []
        if self.idle is not None:
            parts.append(f"after {humanize_duration(self.idle)} without use")
        if self.absolute is not None:
            parts.append(f"{humanize_duration(self.absolute)} after creation")
        return f"{plural} expire {' and '.join(parts)}"


@dataclass(frozen=True)
class HandleKind(Generic[S]):
    """One kind of handle, such as a basket.

    Args:
        name: Lower-case identifier (``"basket"``); also the store group. Messages
            write it with spaces for underscores (``label``).
        prefix: 2 to 8 lower-case letters or digits put before the id (``"bsk"``).
        model: The pydantic model of the state; ``model()`` is the initial state.
        lifetime: The lifetime policy.
        quota: Live handles of this kind one principal may hold (``None``: no limit).
        plural: Display plural; defaults to the name plus "s".
        create_tool: The tool that creates one; defaults to ``create_<name>``.
        list_tool: The tool that lists them; defaults to ``list_<plural>``.
        close_tool: The tool that closes one, if any; named in quota errors.
        id_param: The tool parameter that carries the id; defaults to ``<name>_id``.
        header: Publish the id parameter as the HTTP header ``Mcp-Param-<header>``
            (SEP-2243, e.g. ``"Basket-Id"``), so gateways can route and limit by
            handle; the server then refuses a forged, foreign or wrong-kind id in
            that header before reading the body. ``None`` (the default): no header.
    """

    name: str
    prefix: str
    model: type[S]
    lifetime: Lifetime
    quota: int | None = 100
    plural: str = ""
    create_tool: str = ""
    list_tool: str = ""
    close_tool: str | None = None
    id_param: str = ""
    header: str | None = None
    label: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ValueError(f"a kind name is a lower-case identifier, got {self.name!r}")
        if not _PREFIX.fullmatch(self.prefix):
            raise ValueError(f"a prefix is 2-8 lower-case letters or digits, got {self.prefix!r}")
        if self.header is not None and not _HEADER.fullmatch(self.header):
            raise ValueError(
                f"a header name is letters, digits and '-', such as 'Basket-Id', "
                f"got {self.header[:60]!r}"
            )
        if self.quota is not None and self.quota < 1:
            raise ValueError(f"a quota must be at least 1, got {self.quota!r}")
        label = self.name.replace("_", " ")
        plural = self.plural or f"{label}s"
        defaults = {
            "plural": plural,
            "create_tool": self.create_tool or f"create_{self.name}",
            "list_tool": self.list_tool or f"list_{plural.replace(' ', '_')}",
            "id_param": self.id_param or f"{self.name}_id",
            "label": label,
        }
        for attribute, value in defaults.items():
            object.__setattr__(self, attribute, value)

    @property
    def lifetime_sentence(self) -> str:
        """The sentence for the creating tool's description.

        For example "Baskets expire after 30 minutes without use and 24 hours
        after creation."
        """
        clause = self.lifetime.describe(self.plural)
        return f"{clause[0].upper()}{clause[1:]}."

    @cached_property
    def id_annotation(self) -> Any:
        """The id parameter's type for a tool signature, as every front end writes it.

        ``Annotated[str, Field(...)]`` whose description names the creating tool, the
        prefix and the lifetime, with a length bound::

            async def get_basket(basket_id: basket.id_annotation) -> BasketView: ...
        """
        description = (
            f"The {self.label} id, exactly as {self.create_tool} returned it "
            f"(starts with {self.prefix}_). {self.lifetime_sentence}"
        )
        extra: dict[str, Any] | None = None if self.header is None else {X_MCP_HEADER: self.header}
        info = Field(description=description, max_length=MAX_ID_CHARS, json_schema_extra=extra)
        return Annotated[str, info]

    @cached_property
    def created_model(self) -> type[BaseModel]:
        """The creating tool's result model: ``{"<kind>_id": ..., "expires_at": ...}``."""
        fields: dict[str, Any] = {
            self.id_param: (str, Field(description=f"The new {self.label}'s id.")),
            "expires_at": (str, Field(description="When it expires unless used (ISO 8601, UTC).")),
        }
        return create_model(f"{self.model.__name__}Created", **fields)
