"""The Lua scripts behind ``RedisStore``: one script, one round trip, per method.

(``REPLACE`` serves both ``replace`` and ``replace_or_read``: on a version
mismatch it answers with the live record, which ``replace`` ignores.)

``GET`` and ``REPLACE`` also take a *charge* (``Store.count_and_get``,
``Store.count_and_replace_or_read``): after their own two keys, ``KEYS`` holds a
counter key and its index for each ``Counter``, and after their own arguments,
``ARGV`` holds its member, expires_at, px and limit. The counters are counted
first, in order, as ``INCR`` counts; at the first past its limit the script stops
and answers ``{position, count}`` (two integers, 1-based) without doing its own
work. With no counters, they are the plain methods.

Every script touches one owner's keys only, which share the owner's hash tag and
so one Redis Cluster slot. The record scripts take ``KEYS = [record, index]`` and
``ARGV = [now, member, ...]``; ``now`` and expiries are the caller's clock, in
seconds, passed as exact decimal strings and stored as given, so a record's
expiry reads back bit for bit. ``px`` is the physical time to live in
milliseconds, computed by the caller from the same ``now``.

Each script opens with a shebang (Redis 7+) whose flags say how it behaves when
Redis is out of memory (``maxmemory`` reached with ``noeviction``): a script
without ``allow-oom`` (``CREATE``, ``REPLACE``: the writes that add data) is
refused before it runs, with ``OOM``, so it never writes half of its steps; the
others run, since they delete data or rewrite fields in place (``GET``'s
renewal, ``INCR``'s rate-limit counters of a few bytes, and ``GET``'s charge of
such counters, ``RETIRE``'s close, which frees the record). A charged ``REPLACE``
is refused whole, its count included. Every script is refused before it runs on a replica
(``READONLY``), while Redis loads its data (``LOADING``), while another script
runs too long (``BUSY``) or when Redis refuses writes because it cannot persist
(``MISCONF``). Without a shebang (``flagged(..., False)``, for servers
or fakes without script flags), Redis checks memory only at a script's first
write that can grow memory, after earlier steps already ran.
"""

from __future__ import annotations

__all__ = ["CREATE", "DELETE", "GET", "INCR", "LIST", "REPLACE", "RETIRE", "flagged"]

_WRITES = "#!lua\n"
_ALLOW_OOM = "#!lua flags=allow-oom\n"

_PRELUDE = """
local rec, idx = KEYS[1], KEYS[2]
local now, member = tonumber(ARGV[1]), ARGV[2]

-- The live record as {version, value, expires_at}, or nil. A record that has
-- expired on the caller's clock is reclaimed on the way.
local function live()
  local r = redis.call('HMGET', rec, 'v', 'd', 'x')
  if not r[1] then return nil end
  if tonumber(r[3]) > now then return r end
  redis.call('DEL', rec)
  redis.call('ZREM', idx, member)
  return nil
end

-- Give the record its physical expiry and index it; the index outlives its members.
local function expire(x, px)
  px = tonumber(px)
  if px <= 0 then
    redis.call('DEL', rec)
    redis.call('ZREM', idx, member)
    return
  end
  redis.call('PEXPIRE', rec, px)
  redis.call('ZADD', idx, x, member)
  if redis.call('PTTL', idx) < px then redis.call('PEXPIRE', idx, px) end
end
"""

_COUNT = """
-- Add one to the counter at rec (indexed in idx as member), or start it at 1
-- with expiry x and physical time to live px; return the count.
local function bump(x, px)
  if live() then
    local count = redis.call('HINCRBY', rec, 'v', 1)
    redis.call('HSET', rec, 'd', tostring(count))
    return count
  end
  redis.call('ZREMRANGEBYSCORE', idx, '-inf', ARGV[1])
  redis.call('DEL', rec)
  redis.call('HSET', rec, 'v', 1, 'd', '1', 'x', x)
  expire(x, px)
  return 1
end

-- Count the charge: KEYS[3..] in pairs (counter, index), ARGV from at in fours
-- (member, expires_at, px, limit). {position, count} of the first counter past
-- its limit (the later ones are not counted), or nil.
local function charge(at)
  local own = {rec, idx, member}
  for n = 1, (#KEYS - 2) / 2 do
    local a = at + 4 * (n - 1)
    rec, idx, member = KEYS[2 * n + 1], KEYS[2 * n + 2], ARGV[a]
    local count = bump(ARGV[a + 1], ARGV[a + 2])
    if count > tonumber(ARGV[a + 3]) then
      rec, idx, member = own[1], own[2], own[3]
      return {n, count}
    end
  end
  rec, idx, member = own[1], own[2], own[3]
  return nil
end
"""

CREATE = (
    _PRELUDE
    + """
-- ARGV: now, member, value, expires_at, px, limit ('' for none)
if live() then return 0 end
redis.call('ZREMRANGEBYSCORE', idx, '-inf', ARGV[1])
local limit = tonumber(ARGV[6])
if limit and redis.call('ZCARD', idx) >= limit then
  -- At the limit: forget members whose records vanished (evicted, flushed).
  local prefix = string.sub(rec, 1, #rec - #member)
  for _, m in ipairs(redis.call('ZRANGE', idx, 0, -1)) do
    if redis.call('EXISTS', prefix .. m) == 0 then redis.call('ZREM', idx, m) end
  end
  if redis.call('ZCARD', idx) >= limit then return -1 end
end
redis.call('DEL', rec)
redis.call('HSET', rec, 'v', 1, 'd', ARGV[3], 'x', ARGV[4])
expire(ARGV[4], ARGV[5])
return 1
"""
)

GET = (
    _PRELUDE
    + _COUNT
    + """
-- ARGV: now, member, renew_until ('' for none), px, then the charge's
if #KEYS > 2 then
  local over = charge(5)
  if over then return over end
end
local r = live()
if r and ARGV[3] ~= '' then
  redis.call('HSET', rec, 'x', ARGV[3])
  expire(ARGV[3], ARGV[4])
  r[3] = ARGV[3]
end
return r
"""
)

REPLACE = (
    _PRELUDE
    + _COUNT
    + """
-- ARGV: now, member, value, version, expires_at, px, then the charge's
-- Returns the new version; the live record {version, value, expires_at} if it is
-- at another version (unchanged); nil if there is none.
if #KEYS > 2 then
  local over = charge(7)
  if over then return over end
end
local r = live()
if not r then return nil end
if tonumber(r[1]) ~= tonumber(ARGV[4]) then return r end
redis.call('HSET', rec, 'd', ARGV[3], 'x', ARGV[5])
local version = redis.call('HINCRBY', rec, 'v', 1)
expire(ARGV[5], ARGV[6])
return version
"""
)

DELETE = (
    _PRELUDE
    + """
-- ARGV: now, member, version ('' for any)
local r = live()
if not r or (ARGV[3] ~= '' and tonumber(r[1]) ~= tonumber(ARGV[3])) then return 0 end
redis.call('DEL', rec)
redis.call('ZREM', idx, member)
return 1
"""
)

INCR = (
    _PRELUDE
    + _COUNT
    + """
-- ARGV: now, member, expires_at, px
return bump(ARGV[3], ARGV[4])
"""
)

LIST = """
-- KEYS: index. ARGV: now, record key prefix.
-- Returns key, version, value, expires_at for each live record, flattened.
local idx, now, prefix = KEYS[1], tonumber(ARGV[1]), ARGV[2]
redis.call('ZREMRANGEBYSCORE', idx, '-inf', ARGV[1])
local out = {}
for _, m in ipairs(redis.call('ZRANGE', idx, 0, -1)) do
  local r = redis.call('HMGET', prefix .. m, 'v', 'd', 'x')
  if r[1] and tonumber(r[3]) > now then
    table.insert(out, m)
    table.insert(out, r[1])
    table.insert(out, r[2])
    table.insert(out, r[3])
  else
    redis.call('DEL', prefix .. m)
    redis.call('ZREM', idx, m)
  end
end
return out
"""

RETIRE = (
    _PRELUDE
    + """
-- KEYS: record, index, new record, its index.
-- ARGV: now, member, value, expires_at, px, version ('' for any), keep ('' for no cap)
local r = live()
if not r or (ARGV[6] ~= '' and tonumber(r[1]) ~= tonumber(ARGV[6])) then return 0 end
redis.call('DEL', rec)
redis.call('ZREM', idx, member)
rec, idx = KEYS[3], KEYS[4]
redis.call('DEL', rec)
redis.call('HSET', rec, 'v', 1, 'd', ARGV[3], 'x', ARGV[4])
expire(ARGV[4], ARGV[5])
local keep = tonumber(ARGV[7])
if keep then
  redis.call('ZREMRANGEBYSCORE', idx, '-inf', ARGV[1])
  local excess = redis.call('ZCARD', idx) - keep
  if excess > 0 then
    -- Those that expire soonest go first; never the one just written.
    local prefix = string.sub(rec, 1, #rec - #member)
    for _, m in ipairs(redis.call('ZRANGE', idx, 0, excess)) do
      if excess > 0 and m ~= member then
        redis.call('DEL', prefix .. m)
        redis.call('ZREM', idx, m)
        excess = excess - 1
      end
    end
  end
end
return 1
"""
)


_GROWS = frozenset({"CREATE", "REPLACE"})


def flagged(name: str, flags: bool = True) -> str:
    """The script ``name`` (``"CREATE"``, ...), with its shebang line when ``flags``."""
    body: str = globals()[name]
    if not flags:
        return body
    return (_WRITES if name in _GROWS else _ALLOW_OOM) + body
