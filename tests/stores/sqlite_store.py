"""``SQLiteStore``: a custom backend on the standard library's ``sqlite3``.

An example for the README's "Writing a custom store", not part of the package.
Each method is one SQL transaction, run on a worker thread so the event loop
never blocks; a lock serialises the one connection, and ``BEGIN IMMEDIATE``
serialises processes sharing a database file. Expired rows are deleted through
an index on ``expires_at``, so reclaiming never scans live rows.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread

from stores import LimitExceeded, Record, Store, StoreUnavailable

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    owner TEXT, grp TEXT, key TEXT,
    value BLOB NOT NULL, version INTEGER NOT NULL, expires_at REAL NOT NULL,
    PRIMARY KEY (owner, grp, key)
);
CREATE INDEX IF NOT EXISTS records_by_expiry ON records (expires_at);
"""
_LIVE = "owner = ? AND grp = ? AND key = ? AND expires_at > ?"


class SQLiteStore(Store):
    """Records in one SQLite table; ``path`` is a file or ``":memory:"``."""

    def __init__(self, path: str = ":memory:", *, clock: Callable[[], float] = time.time) -> None:
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()
        self._clock = clock

    async def create(
        self,
        owner: str,
        group: str,
        key: str,
        value: bytes,
        *,
        expires_at: float,
        limit: int | None = None,
    ) -> Record | None:
        def create(db: sqlite3.Connection, now: float) -> Record | None:
            db.execute("DELETE FROM records WHERE expires_at <= ?", (now,))  # reclaim
            live = db.execute(f"SELECT 1 FROM records WHERE {_LIVE}", (owner, group, key, now))
            if live.fetchone():
                return None
            if limit is not None:
                query = "SELECT COUNT(*) FROM records WHERE owner = ? AND grp = ?"
                if db.execute(query, (owner, group)).fetchone()[0] >= limit:
                    raise LimitExceeded(limit)
            row = (owner, group, key, value, expires_at)
            db.execute("INSERT INTO records VALUES (?, ?, ?, ?, 1, ?)", row)
            return Record(value, 1, expires_at)

        return await self._run(create)

    async def get(
        self, owner: str, group: str, key: str, *, renew_until: float | None = None
    ) -> Record | None:
        def get(db: sqlite3.Connection, now: float) -> Record | None:
            query = f"SELECT value, version, expires_at FROM records WHERE {_LIVE}"
            row = db.execute(query, (owner, group, key, now)).fetchone()
            if row is None or renew_until is None:
                return None if row is None else Record(*row)
            update = f"UPDATE records SET expires_at = ? WHERE {_LIVE}"
            db.execute(update, (renew_until, owner, group, key, now))
            return Record(row[0], row[1], renew_until)

        return await self._run(get)

    async def replace(
        self,
        owner: str,
        group: str,
        key: str,
        value: bytes,
        *,
        version: int,
        expires_at: float,
    ) -> Record | None:
        def replace(db: sqlite3.Connection, now: float) -> Record | None:
            update = "UPDATE records SET value = ?, version = version + 1, expires_at = ?"
            where = f" WHERE {_LIVE} AND version = ?"
            params = (value, expires_at, owner, group, key, now, version)
            if db.execute(update + where, params).rowcount == 0:
                return None
            return Record(value, version + 1, expires_at)

        return await self._run(replace)

    async def replace_or_read(
        self,
        owner: str,
        group: str,
        key: str,
        value: bytes,
        *,
        version: int,
        expires_at: float,
    ) -> tuple[bool, Record | None]:
        def replace_or_read(db: sqlite3.Connection, now: float) -> tuple[bool, Record | None]:
            update = "UPDATE records SET value = ?, version = version + 1, expires_at = ?"
            where = f" WHERE {_LIVE} AND version = ?"
            params = (value, expires_at, owner, group, key, now, version)
            if db.execute(update + where, params).rowcount == 1:
                return True, Record(value, version + 1, expires_at)
            query = f"SELECT value, version, expires_at FROM records WHERE {_LIVE}"
            row = db.execute(query, (owner, group, key, now)).fetchone()
            return False, None if row is None else Record(*row)

        return await self._run(replace_or_read)

    async def delete(self, owner: str, group: str, key: str, *, version: int | None = None) -> bool:
        def delete(db: sqlite3.Connection, now: float) -> bool:
            where = f"{_LIVE} AND (? IS NULL OR version = ?)"
            params = (owner, group, key, now, version, version)
            return db.execute(f"DELETE FROM records WHERE {where}", params).rowcount == 1

        return await self._run(delete)

    async def retire(
        self,
        owner: str,
        group: str,
        key: str,
        *,
        into: str,
        value: bytes,
        expires_at: float,
        version: int | None = None,
        keep: int | None = None,
    ) -> bool:
        def retire(db: sqlite3.Connection, now: float) -> bool:
            where = f"{_LIVE} AND (? IS NULL OR version = ?)"
            params = (owner, group, key, now, version, version)
            if db.execute(f"DELETE FROM records WHERE {where}", params).rowcount == 0:
                return False
            row = (owner, into, key, value, expires_at)
            db.execute("INSERT OR REPLACE INTO records VALUES (?, ?, ?, ?, 1, ?)", row)
            if keep is not None:  # the soonest to expire go first, never the new one
                db.execute(
                    "DELETE FROM records WHERE owner = ? AND grp = ? AND key IN ("
                    " SELECT key FROM records WHERE owner = ? AND grp = ? AND key != ?"
                    " AND expires_at > ? ORDER BY expires_at DESC, key DESC LIMIT -1 OFFSET ?)",
                    (owner, into, owner, into, key, now, keep - 1),
                )
            return True

        return await self._run(retire)

    async def list(self, owner: str, group: str) -> dict[str, Record]:
        def list_(db: sqlite3.Connection, now: float) -> dict[str, Record]:
            query = "SELECT key, value, version, expires_at FROM records"
            where = " WHERE owner = ? AND grp = ? AND expires_at > ?"
            rows = db.execute(query + where, (owner, group, now))
            return {key: Record(value, version, expires) for key, value, version, expires in rows}

        return await self._run(list_)

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self._close)

    def _close(self) -> None:
        with self._lock:
            self._db.close()  # closing twice is harmless

    async def _run(self, step: Callable[[sqlite3.Connection, float], T]) -> T:
        """Run ``step`` as one transaction on a worker thread, with the store's now."""
        return await anyio.to_thread.run_sync(self._transaction, step)

    def _transaction(self, step: Callable[[sqlite3.Connection, float], T]) -> T:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    result = step(self._db, self._clock())
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
                return result
            except sqlite3.OperationalError as exc:  # locked too long, read-only, disk I/O
                raise StoreUnavailable(f"SQLite is unavailable: {exc}", applied=False) from exc
