-- lease: ARGV[2] the worker, [3] at most this many URLs, [4] from one
-- host, [5] the host gap (µs), [6] the lease's time to live (µs), [7]
-- MaxLeases, [8] at most this many expired leases reclaimed and delayed
-- URLs moved; ARGV[9..] pairs of host and how many URLs this Lease call
-- took from it already (in an earlier visit of the shard), -1 for a host
-- the worker holds enough of: of those it takes only an interactive URL,
-- one, which goes ahead of what it holds. Returns now, when anything of
-- the shard's is next due (see below), 1 if the shard has ever had an
-- interactive URL (enqueue's il; else 0), then per lease: URL, host,
-- lane, token, leases, depth, found_on.
--
-- There is no janitor: each lease call first does the shard's
-- housekeeping, a bounded amount of it, so a shard that has workers is
-- kept, and one that has none needs no keeping.
local worker, max, perHost, gap, ttl, maxLeases, chores =
  ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]),
  tonumber(ARGV[8])

-- Expired leases: back to the front of their host's queue, or, leased
-- MaxLeases times already, to the dead letters.
local expired = redis.call('ZRANGEBYSCORE', LS, '-inf', int(now), 'LIMIT', 0, chores)
for _, fp in ipairs(expired) do
  redis.call('ZREM', LS, fp)
  local r = dec(redis.call('HGET', U, fp))
  if r and r.st == 'l' then
    count('leased', -1)
    count('wl:' .. r.worker, -1)
    if r.leases >= maxLeases then
      r.st, r.worker = 'x', ''
      redis.call('HSET', U, fp, enc(r))
      redis.call('HSET', DEAD, fp, 'leased ' .. r.leases .. ' times without a commit')
      count('dead', 1)
      hostCount(HP, r.host, -1)
    else
      queue(fp, r, true)
      count('pending', 1)
      count('reclaimed', 1)
    end
  end
end

-- Delayed URLs whose time came: to the front of their queue.
local due = redis.call('ZRANGEBYSCORE', DLY, '-inf', int(now), 'LIMIT', 0, chores)
for _, fp in ipairs(due) do
  redis.call('ZREM', DLY, fp)
  local r = dec(redis.call('HGET', U, fp))
  if r and r.st == 'd' then queue(fp, r, true) end
end

-- The lanes' weighted round, 6:3:1 (1 interactive, 0 normal, 2 bulk),
-- interleaved; a host keeps its place in it (WR), and an empty lane
-- gives its turn to the next.
local round = {1, 1, 0, 1, 1, 0, 1, 2, 1, 0}
local function pick(host, only)
  if only then return redis.call('LPOP', qkey(only, host)) end
  local pos = tonumber(redis.call('HGET', WR, host) or '0') or 0
  for k = 0, 9 do
    local lane = round[(pos + k) % 10 + 1]
    local fp = redis.call('LPOP', qkey(lane, host))
    if fp then
      redis.call('HSET', WR, host, (pos + k + 1) % 10)
      return fp
    end
  end
  return nil
end

local had = {}
for i = 9, #ARGV - 1, 2 do had[ARGV[i]] = tonumber(ARGV[i + 1]) end

-- Fencing tokens grow by one per lease, and never lag Redis's clock
-- (µs): so a Redis that lost its last second of writes, the counter's
-- with them, hands out tokens above every token it handed out before.
local tok = tonumber(redis.call('HGET', C, 'tok') or '0') or 0
local out, taken = {int(now), -1, 0}, 0
local function take(host, limit, only)
  local n, tries = 0, 0
  -- Bounded: a queue entry whose record is not queued (a corrupt or
  -- missing record) is passed over, at most chores of them a call.
  while n < limit and taken < max and tries < limit + chores do
    tries = tries + 1
    local fp = pick(host, only)
    if not fp then break end
    local r = dec(redis.call('HGET', U, fp))
    if not r then
      -- No record to lease it by: counted, not pending any more (else
      -- Finished would wait for it for ever).
      count('pending', -1)
      count('corrupt', 1)
    elseif r.st == 'q' then
      r.st, r.leases, r.worker = 'l', r.leases + 1, worker
      tok = math.max(tok + 1, now)
      r.tok = tok
      redis.call('HSET', U, fp, enc(r))
      redis.call('ZADD', LS, int(now + ttl), fp)
      out[#out + 1] = r.url
      out[#out + 1] = r.host
      out[#out + 1] = r.lane
      out[#out + 1] = r.tok
      out[#out + 1] = r.leases
      out[#out + 1] = r.depth
      out[#out + 1] = r.found
      n, taken = n + 1, taken + 1
    end
  end
  count('pending', -n)
  count('leased', n)
  count('wl:' .. worker, n)
  if redis.call('EXISTS', qkey(0, host), qkey(1, host), qkey(2, host)) == 0 then
    redis.call('ZREM', RDY, host)
    redis.call('HDEL', WR, host)
    local d = tonumber(redis.call('HGET', HDEF, host) or '0') or 0
    if d <= now then redis.call('HDEL', HDEF, host) end
  else
    redis.call('ZADD', RDY, 'XX', int(now + gap), host)
  end
end

local hosts = redis.call('ZRANGEBYSCORE', RDY, '-inf', int(now), 'LIMIT', 0, max + (#ARGV - 8) / 2)
for _, host in ipairs(hosts) do
  if taken >= max then break end
  if had[host] == -1 then
    take(host, 1, 1) -- a host the worker holds enough of: an interactive URL only
  else
    local limit = perHost - (had[host] or 0)
    if limit > 0 then take(host, limit) end
  end
end
if taken > 0 then redis.call('HSET', C, 'tok', int(tok)) end
-- The earliest time anything of the shard's may be due: a host, a lease's
-- expiry, a delayed URL (-1: nothing at all); callers pass over a shard
-- with nothing due for a while.
local nxt = -1
for _, key in ipairs({RDY, LS, DLY}) do
  local z = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if z[2] then
    local t = tonumber(z[2])
    if nxt < 0 or t < nxt then nxt = t end
  end
end
out[2] = int(nxt)
if redis.call('HEXISTS', C, 'il') == 1 then out[3] = 1 end
return out
