"""Stores for handle state: one small async contract and its backends.

``Store`` and ``MemoryStore`` are importable from here. ``RedisStore`` lives in
``stores.redis`` so that ``import stores`` never imports redis (install the
``redis`` extra to use it). ``stores.testing`` holds the conformance suite that
any backend can run.
"""

from .base import LimitExceeded as LimitExceeded
from .base import Record as Record
from .base import Store as Store
from .base import StoreError as StoreError
from .base import StoreFull as StoreFull
from .base import StoreUnavailable as StoreUnavailable
from .memory import MemoryStore as MemoryStore

__all__ = [
    "LimitExceeded",
    "MemoryStore",
    "Record",
    "Store",
    "StoreError",
    "StoreFull",
    "StoreUnavailable",
]
