"""Stores for handle state: one small async contract and its backends.

``Store``, ``MemoryStore`` and ``RedisStore`` are importable from here; ``RedisStore``
(``stores.redis``, with the ``redis`` extra) is imported on first use, so that
``import stores`` never imports redis. ``stores.testing`` holds the conformance suite that
any backend can run.
"""

from typing import TYPE_CHECKING, Any

from .base import Counter as Counter
from .base import CountExceeded as CountExceeded
from .base import LimitExceeded as LimitExceeded
from .base import Record as Record
from .base import Store as Store
from .base import StoreError as StoreError
from .base import StoreFull as StoreFull
from .base import StoreUnavailable as StoreUnavailable
from .memory import MemoryStore as MemoryStore

if TYPE_CHECKING:
    from .redis import RedisStore as RedisStore

__all__ = [
    "CountExceeded",
    "Counter",
    "LimitExceeded",
    "MemoryStore",
    "Record",
    "RedisStore",
    "Store",
    "StoreError",
    "StoreFull",
    "StoreUnavailable",
]


def __getattr__(name: str) -> Any:
    if name == "RedisStore":
        from .redis import RedisStore

        return RedisStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
