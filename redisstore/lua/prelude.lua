-- Shared by every script of polite's Redis store (prepended to each).
--
-- KEYS[1] is the host's hash, KEYS[2] its list of recent breaker failure
-- times, KEYS[3] its in-flight leases (a sorted set: member a worker's
-- lease id, score when the lease expires), KEYS[4] the fleet controller's
-- log (a list of entries, see log.lua) and KEYS[5] a snapshot of the
-- controller; all carry the host key as their hash tag, so one host's keys
-- share a Cluster slot. Arguments and reply slots are named (A.<name>,
-- O.<name>) by the header schema.go generates; the first four are the
-- same for every script: the caller's clock in microseconds (0: Redis's
-- TIME, as in production), the host's configured rate (-1: unlimited),
-- its burst, and how long an idle host's keys live (microseconds).
--
-- Times are integer microseconds since the Unix epoch, exact in Lua's
-- doubles until about 2255; they are written with %.0f, never tostring
-- (which keeps 14 digits). Rates are requests per second, written with
-- %.17g. The host's state (the hash):
--   f   when the token bucket is full again (absent: full)
--   r   the host's own rate (absent: ARGV[2]); c, rc the RateLimit and
--       robots.txt ceilings (0: none; rc also makes the burst 1)
--   pu, pw   the pause's end and reason
--   blk      the soft block's reason
--   cbs, cbu, cbd   breaker state (0 closed, 1 open, 2 half-open), when it
--            lets the next probe through, its open delay
--   lt       when the last counted throttle was heard
--   bf, be, bt   the retry budget: floor tokens, earned tokens, last update
--   ln       the latest instant seen, so Redis's clock never runs backwards here
--   sq, lf   the controller log's last and first entry numbers (0: none)
--   t0       when the log began (µs): its epoch, the replicas' origin
--   ss       the entry the stored snapshot stands at (0: none)
--   rs       the entry the controller's rate (r) follows
--   cc       the controller's cap on requests in flight (0: none)
local H, F, L, G, S = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]

-- A mutating script (admit, report) is safe to repeat: its caller names
-- the call (the last ARGV) and KEYS[6] keeps each call's reply for a
-- minute. A call repeated because its reply was lost gets the first reply
-- back and changes nothing again: no second token, no second failure.
local D, rid = KEYS[6], nil
if D then
  rid = ARGV[#ARGV]
  local prev = redis.call('HGET', D, rid)
  if prev then return cmsgpack.unpack(prev) end
end

-- remember keeps a mutating call's reply under its name, and returns it.
local function remember(out)
  if D then
    redis.call('HSET', D, rid, cmsgpack.pack(out))
    redis.call('PEXPIRE', D, 60000)
  end
  return out
end

local function num(v, d)
  local n = tonumber(v)
  if n == nil then return d end
  return n
end

local function int(x) return string.format('%.0f', x) end
local function flt(x) return string.format('%.17g', x) end

local st = {}
local fields = {'f', 'r', 'c', 'rc', 'pu', 'pw', 'blk', 'cbs', 'cbu', 'cbd', 'lt', 'bf', 'be', 'bt', 'ln',
  'sq', 'lf', 't0', 'ss', 'rs', 'cc'}
local raw = redis.call('HMGET', H, unpack(fields)) -- as stored, so save writes only what changed
do
  local v = raw
  st.f, st.r, st.c, st.rc = num(v[1], nil), num(v[2], nil), num(v[3], 0), num(v[4], 0)
  st.pu, st.pw, st.blk = num(v[5], 0), v[6] or '', v[7] or ''
  st.cbs, st.cbu, st.cbd, st.lt = num(v[8], 0), num(v[9], 0), num(v[10], 0), num(v[11], 0)
  st.bf, st.be, st.bt, st.ln = num(v[12], nil), num(v[13], 0), num(v[14], 0), num(v[15], 0)
  st.sq, st.lf, st.t0, st.ss, st.rs, st.cc = num(v[16], 0), num(v[17], 0), num(v[18], 0), num(v[19], 0), num(v[20], 0), num(v[21], 0)
end

local now = num(ARGV[A.clock], 0)
if now <= 0 then
  local t = redis.call('TIME')
  -- After a failover to a replica whose clock is behind, time still
  -- only moves forward for the host. (A caller's clock, in tests, is
  -- taken as it is.)
  now = math.max(tonumber(t[1]) * 1000000 + tonumber(t[2]), st.ln)
end
st.ln = math.max(now, st.ln)

local baseRate, baseBurst, idle = num(ARGV[A.baseRate], -1), math.max(num(ARGV[A.baseBurst], 1), 1), num(ARGV[A.idle], 0)

-- inforce returns the rate in force (-1: unlimited) and the burst.
local function inforce()
  local r = st.r or baseRate
  local b = baseBurst
  if st.c > 0 and (r < 0 or st.c < r) then r = st.c end
  if st.rc > 0 then
    if r < 0 or st.rc < r then r = st.rc end
    b = 1
  end
  return r, b
end

-- interval is the microseconds per token at rate, rounded up (so rounding
-- can only under-admit); 0 when unlimited.
local function interval(r)
  if r < 0 then return 0 end
  if r == 0 then return 1e15 end
  return math.ceil(1e6 / r)
end

-- tokens is what the bucket holds at now, negative when reserved ahead.
local function tokens(r, b)
  local ei = interval(r)
  if ei == 0 or st.f == nil or st.f <= now then return b end
  return b - (st.f - now) / ei
end

-- retime keeps the tokens across a change of rate or burst: neither lost
-- nor invented (a debt is kept too).
local function retime(r0, b0, r1, b1)
  if r0 == r1 and b0 == b1 then return end
  local ei = interval(r1)
  if ei == 0 then st.f = nil return end
  local t = math.min(tokens(r0, b0), b1)
  st.f = now + math.ceil((b1 - t) * ei)
end

-- take takes cost tokens at now, or reserves them if they come within
-- maxWait; it returns whether it did and the wait (until the reserved
-- tokens, or until they would come), and true third when cost is above
-- the burst (never admitted).
local function take(maxWait, cost)
  cost = cost or 1
  local r, b = inforce()
  local ei = interval(r)
  if ei == 0 then return true, 0 end
  if cost > b then return false, 0, true end
  local f = st.f or now
  if f < now then f = now end
  local slot = f + cost * ei - b * ei
  if slot <= now then st.f = f + cost * ei return true, 0 end
  if slot - now <= maxWait then st.f = f + cost * ei return true, slot - now end
  return false, slot - now
end

-- drain empties the bucket at now; a debt is kept.
local function drain()
  local r, b = inforce()
  local ei = interval(r)
  if ei == 0 then return end
  st.f = math.max(st.f or now, now + b * ei)
end

-- forgive gives back cost tokens as far as the bucket is in debt.
local function forgive(cost)
  cost = cost or 1
  local r, b = inforce()
  local ei = interval(r)
  if ei == 0 or st.f == nil then return end
  local empty = now + b * ei
  if st.f > empty then st.f = math.max(st.f - cost * ei, empty) end
end

-- pause extends the pause to u (never shortens it); true if it moved.
local function pause(u, why)
  if u <= st.pu then return false end
  st.pu, st.pw = u, why
  return true
end

-- jittered is the open delay d shortened by the fraction cut (0..1) the
-- caller drew.
local function jittered(d, cut)
  return d - math.floor(d * math.min(math.max(cut, 0), 1))
end

-- The retry budget (retry.Budget's arithmetic): ratio per first attempt,
-- a floor of minps per second up to window seconds' worth, earned tokens
-- fading with time constant window.
local function advance(ratio, minps, window)
  if st.bf == nil then
    st.bf, st.bt = math.max(minps, 0) * window, now
    return
  end
  local dt = now - st.bt
  if dt <= 0 then return end
  st.bt = now
  local sec = dt / 1e6
  if minps > 0 then st.bf = math.min(math.max(minps, 0) * window, st.bf + minps * sec) end
  if st.be > 0 then st.be = st.be * math.exp(-sec / window) end
end

-- inflight drops expired leases and returns how many are live.
local function inflight()
  redis.call('ZREMRANGEBYSCORE', L, '-inf', now)
  return redis.call('ZCARD', L)
end

-- encode returns field i of st as stored ('' for a default left unstored).
local function encode(i)
  local k = fields[i]
  local v = st[k]
  if k == 'f' or k == 'r' or k == 'bf' then
    if v == nil then return false end
  elseif k == 'pw' or k == 'blk' then
    if v == '' then return false end
    return v
  elseif v == 0 then
    return false
  end
  if k == 'r' or k == 'c' or k == 'rc' or k == 'be' or k == 'bf' then return flt(v) end
  return int(v)
end

local function save()
  -- Write only the fields that changed: a plain admission changes one or
  -- two. ln moves on every call; it is written once it is a second ahead
  -- (time stays monotonic for a host within that).
  local kv, del = {}, {}
  for i = 1, #fields do
    local e = encode(i)
    local was = raw[i]
    if fields[i] == 'ln' and e and was and st.ln - tonumber(was) < 1000000 then e = was end
    if e ~= was then
      if e then
        kv[#kv + 1] = fields[i]
        kv[#kv + 1] = e
      else
        del[#del + 1] = fields[i]
      end
    end
  end
  if #kv > 0 then redis.call('HSET', H, unpack(kv)) end
  if #del > 0 then redis.call('HDEL', H, unpack(del)) end
  -- Kept while anything in it matters, then as long as an idle host is;
  -- a block or a breaker that is not closed is kept a day more.
  local keep = math.max((st.f or now) - now, st.pu - now, st.cbu - now, 0) + idle
  if st.blk ~= '' or st.cbs ~= 0 then keep = keep + 86400000000 end
  local last = redis.call('ZRANGE', L, -1, -1, 'WITHSCORES')
  if last[2] then keep = math.max(keep, tonumber(last[2]) - now) end
  local ms = math.ceil(keep / 1000)
  redis.call('PEXPIRE', H, ms)
  redis.call('PEXPIRE', F, ms)
  redis.call('PEXPIRE', L, ms)
  if st.sq > 0 then
    redis.call('PEXPIRE', G, ms)
    redis.call('PEXPIRE', S, ms)
  end
end
