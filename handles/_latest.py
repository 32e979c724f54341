"""``Latest``: the last version of each handle this process wrote or read, bounded.

An edit needs the state it changes and that state's version. Read from the
store, that is a round trip before the compare-and-set; when this process wrote
or read the handle last (handle-affine routing makes that the usual case), the
record is already here. The writer then sends the compare-and-set straight
away, with the version it remembers, as ``Store.replace_or_read``: if the
version moved (another replica wrote), the same reply carries the live record,
and the edit runs again on it; if the record is gone (closed, expired, on any
replica), the reply says so. A remembered record is only a guess, never shown
to anyone: what the model sees comes from a compare-and-set that applied or a
record the store just returned.

Bounded by the bytes of the values held (plus ``ENTRY_OVERHEAD`` each); the
least recently used go first.
"""

from __future__ import annotations

from collections import OrderedDict

from stores.base import Record

__all__ = ["ENTRY_OVERHEAD", "Latest"]

Key = tuple[str, str, str]

ENTRY_OVERHEAD = 256
"""Bytes counted per entry on top of its value: the key's strings, the record, the links."""


class Latest:
    """Records by ``(owner, kind, id)``, at most ``max_bytes`` of them, least recently used out."""

    __slots__ = ("_bytes", "_records", "max_bytes")

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError("max_bytes must not be negative")
        self.max_bytes = max_bytes
        self._records: OrderedDict[Key, Record] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._records)

    @property
    def bytes(self) -> int:
        """What the entries held count for, in bytes."""
        return self._bytes

    def get(self, key: Key) -> Record | None:
        """The record last seen at ``key``, if still held."""
        record = self._records.get(key)
        if record is not None:
            self._records.move_to_end(key)
        return record

    def put(self, key: Key, record: Record) -> None:
        """Remember ``record``, the latest the store answered (a write, or its reply)."""
        if len(record.value) + ENTRY_OVERHEAD > self.max_bytes:
            self.drop(key)  # never held, and it would push out everything else
            return
        records = self._records
        old = records.pop(key, None)
        if old is not None:
            self._bytes -= len(old.value)
        else:
            self._bytes += ENTRY_OVERHEAD
        records[key] = record
        self._bytes += len(record.value)
        while self._bytes > self.max_bytes:
            _, old = records.popitem(last=False)
            self._bytes -= len(old.value) + ENTRY_OVERHEAD

    def offer(self, key: Key, record: Record) -> None:
        """Remember a record read outside the key's turn, unless a newer one is held."""
        held = self._records.get(key)
        if held is None or held.version < record.version:
            self.put(key, record)
        else:
            self._records.move_to_end(key)

    def drop(self, key: Key) -> None:
        """Forget ``key`` (its record may be gone, or at an unknown version)."""
        old = self._records.pop(key, None)
        if old is not None:
            self._bytes -= len(old.value) + ENTRY_OVERHEAD
