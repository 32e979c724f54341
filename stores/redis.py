"""``RedisStore``: records in Redis or Redis Cluster, on ``redis.asyncio``.

Each method is one Lua script, so one round trip and one atomic step (a charge's
counters included: ``count_and_get`` and ``count_and_replace_or_read`` are the
``get`` and ``replace_or_read`` scripts with the counters' keys added). Keys::

    <namespace>:{<owner>}:r:<group>:<key>   hash: v (version), d (value), x (expires_at)
    <namespace>:{<owner>}:i:<group>         zset: key -> expires_at

The ``{<owner>}`` hash tag puts an owner's records and indexes in one cluster
slot; ``%``, ``{``, ``}`` in the owner and ``%``, ``:`` in the group are
percent-escaped so that distinct addresses never share a key. Expiry follows the
store's ``clock`` (the contract's clock), and each key also gets a physical
``PEXPIRE`` of ``expires_at - now`` so that Redis reclaims it by itself; the
index is trimmed lazily by ``create`` and ``list``.

``redis.asyncio`` runs on asyncio only (not trio).

The clients that ``from_url`` builds never resend a script after a connection
error or a timeout: the script may have run, and running a write twice would
turn a success into a conflict (``create`` returning ``None``, ``replace``
refusing its own version). The store raises ``StoreUnavailable`` instead, and
the caller decides. A client passed in keeps its own retry settings.

Errors: what Redis refuses before running a script (``OOM`` when it is out of
memory under ``noeviction``, ``BUSY``, ``LOADING``, ``READONLY``, ``MISCONF``,
cluster ``TRYAGAIN``/``CLUSTERDOWN``/``MASTERDOWN``) and a connection that could
not be made raise ``StoreUnavailable`` with ``applied=False`` (``StoreFull`` for
``OOM``); a timeout or a connection lost mid-request raises it with
``applied=None``: the script may have run, or may still run when Redis wakes up.
Any other error reply also becomes ``StoreUnavailable`` (``applied=None``, its
code in the message, the reply as the cause), so no Redis exception leaves the
store. Scripts carry flags (``stores._redis_lua``) so that Redis refuses the
writes that add data up front when it is out of memory.

Failover (Redis Cluster, or a replicated primary): Redis replicates
asynchronously, and a method returns once the primary has applied it. A write
acknowledged just before the primary dies can be missing on the replica that
takes over: a created record may be absent, a ``replace`` may be undone (the
record is back at the previous version and value, and a ``replace`` at the
version the client last saw returns ``None``), a deleted record may reappear.
What is guaranteed: every record read was written by some method call, versions
and values stay paired, expiry still holds, and once the cluster has promoted
the replica (about twice ``cluster-node-timeout``) the same store object works
again; meanwhile methods raise ``StoreUnavailable``. ``WAIT numreplicas
timeout`` sent to the owner's primary after a write would narrow the window (at
the cost of a second round trip and a replica's latency); this store does not
send it, and even with it Redis promises no strong consistency.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

try:
    from redis.asyncio import BlockingConnectionPool, Redis
    from redis.asyncio.cluster import RedisCluster
    from redis.backoff import NoBackoff
    from redis.commands.core import AsyncScript
    from redis.exceptions import (
        BusyLoadingError,
        ClusterDownError,
        ClusterError,
        MasterDownError,
        NoScriptError,
        OutOfMemoryError,
        ReadOnlyError,
        RedisClusterException,
        RedisError,
        ResponseError,
        TryAgainError,
    )
    from redis.retry import Retry
    from redis.typing import EncodableT
except ImportError as exc:  # pragma: no cover - exercised in a subprocess
    raise ImportError("stores.redis needs redis-py: pip install 'mcp-handles[redis]'") from exc

from . import _redis_lua
from ._redis_wire import Wire
from .base import (
    Counter,
    CountExceeded,
    LimitExceeded,
    Record,
    Store,
    StoreFull,
    StoreUnavailable,
)

__all__ = ["RedisStore"]

_UNAVAILABLE = (
    RedisError,  # connections, timeouts, error replies, cluster errors
    ClusterError,
    RedisClusterException,  # our scripts never cross slots: this is topology trouble
    OSError,
)

_REFUSED = (BusyLoadingError, ReadOnlyError, ClusterDownError, MasterDownError, TryAgainError)
"""Errors Redis replies before running anything: the script did not run."""

_REFUSED_CODES = frozenset({"BUSY", "MISCONF", "LOADING", "READONLY", "NOREPLICAS"})
"""Error codes, from plain ``ResponseError`` replies, of a command refused before it ran."""

_CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}


def _cluster_defaults() -> dict[str, Any]:
    """Cluster client settings: fail fast while a failover is in progress, never resend."""
    return {
        "socket_timeout": 1.0,
        "socket_connect_timeout": 0.5,
        "retry": Retry(NoBackoff(), retries=0),
        "max_connections": 64,
    }


_CLUSTER_WAIT = 5.0
"""Seconds a call waits for one of a cluster store's ``max_connections`` turns."""


def _server_defaults() -> dict[str, Any]:
    """Single-server client settings: a bounded pool, short timeouts, never resend."""
    return {
        "max_connections": 64,
        "timeout": 5.0,
        "socket_timeout": 2.0,
        "socket_connect_timeout": 1.0,
    }


def _escape(text: str, specials: str) -> str:
    """Percent-escape ``%`` and ``specials`` so joined key parts stay unambiguous."""
    for char in "%" + specials:
        text = text.replace(char, f"%{ord(char):02X}")
    return text


@contextmanager
def _unavailable() -> Iterator[None]:
    """Turn connection and cluster-topology errors into ``StoreUnavailable``."""
    try:
        yield
    except _UNAVAILABLE as exc:
        raise _unavailable_error(exc) from exc


def _unavailable_error(exc: BaseException) -> StoreUnavailable:
    """The ``StoreUnavailable`` for a Redis error (see the module docstring)."""
    # The class name or error code only: messages may carry addresses; the cause
    # keeps the detail.
    if isinstance(exc, OutOfMemoryError):
        return StoreFull("Redis is out of memory (OOM)")
    if isinstance(exc, _REFUSED):
        return StoreUnavailable(f"Redis refused the command ({type(exc).__name__})", applied=False)
    if isinstance(exc, ResponseError):
        code = str(exc).split(" ", 1)[0]
        if code == "OOM":
            return StoreFull("Redis is out of memory (OOM)")
        name = code if code.isupper() and len(code) <= 20 else type(exc).__name__
        applied = False if code in _REFUSED_CODES else None
        return StoreUnavailable(f"Redis refused the command ({name})", applied=applied)
    text = str(exc).lower()
    # Not connected, or no connection to send on: nothing was sent.
    sent = "connecting" not in text and "no connection available" not in text
    applied = None if sent else False
    return StoreUnavailable(f"Redis is unavailable ({type(exc).__name__})", applied=applied)


class RedisStore(Store):
    """A ``Store`` on a ready ``redis.asyncio`` client (``Redis`` or ``RedisCluster``).

    Args:
        client: A client with ``decode_responses=False``; the store does not close it.
        namespace: Prefix of every key; must not contain ``{`` or ``}``.
        clock: Unix time in seconds; the contract's notion of now.
        script_flags: Open each script with its flags (needs Redis 7+), so that
            Redis refuses the writes that add data, before they run, when it is out
            of memory; pass ``False`` for a server or a fake without them.
    """

    def __init__(
        self,
        client: Redis | RedisCluster,
        *,
        namespace: str = "mcp-handles",
        clock: Callable[[], float] = time.time,
        script_flags: bool = True,
    ) -> None:
        if "{" in namespace or "}" in namespace:
            raise ValueError("namespace must not contain '{' or '}' (hash tag syntax)")
        if client.get_encoder().decode_responses:
            raise ValueError("RedisStore needs a client with decode_responses=False")
        self.client = client
        self.namespace = namespace
        self._clock = clock
        self._owns_client = False
        self._discovered = not isinstance(client, RedisCluster)
        self._discovering = asyncio.Lock()
        self._wire: Wire | None = None  # see from_url
        self._turns: asyncio.Semaphore | None = None  # see from_url

        def script(name: str) -> AsyncScript:
            return client.register_script(_redis_lua.flagged(name, script_flags))

        self._create = script("CREATE")
        self._get = script("GET")
        self._replace = script("REPLACE")
        self._delete = script("DELETE")
        self._list = script("LIST")
        self._incr = script("INCR")
        self._retire = script("RETIRE")

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        namespace: str = "mcp-handles",
        clock: Callable[[], float] = time.time,
        **client_kwargs: Any,
    ) -> RedisStore:
        """Build a store that owns its client; ``aclose()`` closes it.

        ``redis://``, ``rediss://`` and ``unix://`` URLs give a ``Redis`` client on a
        blocking pool of at most 64 connections (a call waits up to 5 s for one)
        that gives up on connecting after 1 s and on an answer after 2 s, so a
        dead or hung Redis costs a caller ``StoreUnavailable`` within about 2 s
        rather than redis-py's 5 s (a script's own work takes milliseconds).
        With ``redis://`` and ``unix://`` and no ``client_kwargs``, the store runs
        its scripts over its own pipelined connection instead, with the same
        timeouts (``stores._redis_wire``), and the ``Redis`` client stays for
        anything else you do with ``store.client``.
        ``redis+cluster://host:port`` and ``rediss+cluster://`` give a
        ``RedisCluster`` that fails fast while a failover is in progress and
        lets at most ``max_connections`` (64) calls run at once, the others
        waiting up to 5 s for a turn: redis-py's cluster pool has no waiting,
        so a burst of calls would open a connection each, all at once, and
        fail with "Too many connections" past its size.
        ``client_kwargs`` override these defaults.
        """
        scheme, _, rest = url.partition("://")
        client: Redis | RedisCluster
        turns: asyncio.Semaphore | None = None
        if scheme in _CLUSTER_SCHEMES:
            kwargs = _cluster_defaults() | client_kwargs
            client = RedisCluster.from_url(f"{_CLUSTER_SCHEMES[scheme]}://{rest}", **kwargs)
            turns = asyncio.Semaphore(kwargs["max_connections"])
        else:
            kwargs = _server_defaults() | client_kwargs
            client = Redis.from_pool(BlockingConnectionPool.from_url(url, **kwargs))
        store = cls(client, namespace=namespace, clock=clock)
        store._owns_client = True
        store._turns = turns
        if scheme in ("redis", "unix") and not client_kwargs:
            connect, reply = kwargs["socket_connect_timeout"], kwargs["socket_timeout"]
            store._wire = Wire(url, connect_timeout=connect, timeout=reply)
        return store

    async def aclose(self) -> None:
        if self._owns_client:
            self._owns_client = False
            if self._wire is not None:
                await self._wire.aclose()
            await self.client.aclose()

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
        now = self._clock()
        px, limit_arg = _px(expires_at, now), "" if limit is None else limit
        args = (value, _time(expires_at), px, limit_arg)
        status = await self._run(self._create, owner, group, key, now, *args)
        if status == -1:
            raise LimitExceeded(limit or 0)
        return Record(value, 1, expires_at) if status == 1 else None

    async def get(
        self, owner: str, group: str, key: str, *, renew_until: float | None = None
    ) -> Record | None:
        now = self._clock()
        renew = ("", 0) if renew_until is None else (_time(renew_until), _px(renew_until, now))
        fields = await self._run(self._get, owner, group, key, now, *renew)
        return None if fields is None else _record(fields)

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
        applied, record = await self.replace_or_read(
            owner, group, key, value, version=version, expires_at=expires_at
        )
        return record if applied else None

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
        now = self._clock()
        args = (value, version, _time(expires_at), _px(expires_at, now))
        reply = await self._run(self._replace, owner, group, key, now, *args)
        if type(reply) is int:
            return True, Record(value, reply, expires_at)
        return False, None if reply is None else _record(reply)

    async def count_and_get(
        self,
        owner: str,
        group: str,
        key: str,
        *,
        charge: Sequence[Counter],
        renew_until: float | None = None,
    ) -> Record | None:
        now = self._clock()
        renew = ("", 0) if renew_until is None else (_time(renew_until), _px(renew_until, now))
        reply = await self._charged(self._get, owner, group, key, now, renew, charge)
        return None if reply is None else _record(reply)

    async def count_and_replace_or_read(
        self,
        owner: str,
        group: str,
        key: str,
        value: bytes,
        *,
        version: int,
        expires_at: float,
        charge: Sequence[Counter],
    ) -> tuple[bool, Record | None]:
        now = self._clock()
        args = (value, version, _time(expires_at), _px(expires_at, now))
        reply = await self._charged(self._replace, owner, group, key, now, args, charge)
        if type(reply) is int:
            return True, Record(value, reply, expires_at)
        return False, None if reply is None else _record(reply)

    async def _charged(
        self,
        script: AsyncScript,
        owner: str,
        group: str,
        key: str,
        now: float,
        args: Sequence[EncodableT],
        charge: Sequence[Counter],
    ) -> Any:
        """Run a record script with the charge's counters after its own keys and arguments.

        Raises:
            CountExceeded: The script answered ``{position, count}``: it did nothing else.
        """
        prefix, index = self._keys(owner, group)
        keys, argv = [prefix + key, index], [_time(now), key, *args]
        for counter in charge:
            counter_prefix, counter_index = self._keys(owner, counter.group)
            keys += [counter_prefix + counter.key, counter_index]
            expires = counter.expires_at
            argv += [counter.key, _time(expires), _px(expires, now), counter.limit]
        reply = await self._script(script, keys, argv)
        if isinstance(reply, list) and len(reply) == 2:
            position, count = reply
            raise CountExceeded(charge[int(position) - 1], int(count))
        return reply

    async def delete(self, owner: str, group: str, key: str, *, version: int | None = None) -> bool:
        expected = "" if version is None else version
        return bool(await self._run(self._delete, owner, group, key, self._clock(), expected))

    async def incr(self, owner: str, group: str, key: str, *, expires_at: float) -> int:
        now = self._clock()
        args = (_time(expires_at), _px(expires_at, now))
        return int(await self._run(self._incr, owner, group, key, now, *args))

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
        now = self._clock()
        prefix, index = self._keys(owner, group)
        new_prefix, new_index = self._keys(owner, into)
        keys = [prefix + key, index, new_prefix + key, new_index]
        expected: EncodableT = "" if version is None else version
        cap: EncodableT = "" if keep is None else keep
        args: list[EncodableT] = [
            _time(now),
            key,
            value,
            _time(expires_at),
            _px(expires_at, now),
            expected,
            cap,
        ]
        return bool(await self._script(self._retire, keys, args))

    async def list(self, owner: str, group: str) -> dict[str, Record]:
        prefix, index = self._keys(owner, group)
        flat = await self._script(self._list, [index], [_time(self._clock()), prefix])
        return {flat[i].decode(): _record(flat[i + 1 : i + 4]) for i in range(0, len(flat), 4)}

    async def _run(
        self, script: AsyncScript, owner: str, group: str, key: str, now: float, *args: EncodableT
    ) -> Any:
        """Run a record script: ``KEYS = [record, index]``, ``ARGV = [now, key, *args]``."""
        prefix, index = self._keys(owner, group)
        return await self._script(script, [prefix + key, index], [_time(now), key, *args])

    async def _script(
        self, script: AsyncScript, keys: Sequence[str], args: Sequence[EncodableT]
    ) -> Any:
        """Run ``script`` on the store's own connection, else through redis-py."""
        if self._wire is not None:  # the common case, without the cluster's steps
            try:
                return await self._call_wire(self._wire, script, keys, args)
            except _UNAVAILABLE as exc:
                raise _unavailable_error(exc) from exc
        if self._turns is not None:
            await self._take_turn(self._turns)
            try:
                return await self._client_script(script, keys, args)
            finally:
                self._turns.release()
        return await self._client_script(script, keys, args)

    async def _client_script(
        self, script: AsyncScript, keys: Sequence[str], args: Sequence[EncodableT]
    ) -> Any:
        with _unavailable():
            await self._discover()
            return await script(keys=keys, args=args)

    @staticmethod
    async def _take_turn(turns: asyncio.Semaphore) -> None:
        """Wait up to ``_CLUSTER_WAIT`` seconds for one of ``turns``; nothing was sent."""
        try:
            async with asyncio.timeout(_CLUSTER_WAIT):
                await turns.acquire()
        except TimeoutError:
            raise StoreUnavailable(
                f"Redis is unavailable: every connection stayed busy for {_CLUSTER_WAIT:g} s",
                applied=False,
            ) from None

    @staticmethod
    async def _call_wire(
        wire: Wire, script: AsyncScript, keys: Sequence[str], args: Sequence[EncodableT]
    ) -> Any:
        """``EVALSHA`` on the store's own connection; the script is loaded if Redis
        does not know it (after a restart or ``SCRIPT FLUSH``: it did not run)."""
        command = ("EVALSHA", script.sha, len(keys), *keys, *args)
        try:
            return await wire.call(*command)  # type: ignore[arg-type]
        except NoScriptError:
            await wire.call("SCRIPT", "LOAD", script.script)  # type: ignore[arg-type]
            return await wire.call(*command)  # type: ignore[arg-type]

    async def _discover(self) -> None:
        """Learn a cluster's topology once, before concurrent first calls race to.

        redis-py 8.1's ``RedisCluster`` drops in-flight connections when several
        calls start on a fresh client at once; one ``initialize()`` first avoids it.
        """
        if not self._discovered:
            async with self._discovering:
                if not self._discovered:
                    assert isinstance(self.client, RedisCluster)
                    await self.client.initialize()
                    self._discovered = True

    def _keys(self, owner: str, group: str) -> tuple[str, str]:
        """The record key prefix and the index key of ``(owner, group)``."""
        # An empty tag would hash the whole key; "%" alone is no escaped string.
        base = f"{self.namespace}:{{{_escape(owner, '{}') or '%'}}}"
        escaped = _escape(group, ":")
        return f"{base}:r:{escaped}:", f"{base}:i:{escaped}"


def _px(expires_at: float, now: float) -> int:
    """Milliseconds to live, rounded up so Redis never drops a record early."""
    return math.ceil((expires_at - now) * 1000)


def _time(seconds: float) -> str:
    """A time as the exact decimal string the scripts store and compare."""
    return repr(float(seconds))


def _record(fields: Sequence[bytes]) -> Record:
    version, value, expires_at = fields
    return Record(value, int(version), float(expires_at))
