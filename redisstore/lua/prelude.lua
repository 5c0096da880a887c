-- Shared by every script of polite's Redis store (prepended to each).
--
-- KEYS[1] is the host's hash, KEYS[2] its list of recent breaker failure
-- times, KEYS[3] its in-flight leases (a sorted set: member a worker's
-- lease id, score minus when the lease expires, so that the newest come
-- first; and a keeper, see admit.lua),
-- KEYS[4] the fleet controller's log (a list of entries, see log.lua) and
-- KEYS[5] a snapshot of the controller; all carry the host key as their hash tag, so one host's keys
-- share a Cluster slot. Arguments and reply slots are named (A.<name>,
-- O.<name>) in schema.go, which numbers them when it builds the script;
-- the first four are the same for every script: the caller's clock in microseconds (0: Redis's
-- TIME, as in production), the host's configured rate (-1: unlimited),
-- its burst, and how long an idle host's keys live (microseconds).
--
-- Times are integer microseconds since the Unix epoch, exact in Lua's
-- doubles until about 2255; they are written with %.0f, never tostring
-- (which keeps 14 digits). Rates are requests per second, written with
-- %.17g. The host's state (st) is kept in one field of the hash, "s", a
-- MessagePack array in the order of fields below (absent values nil),
-- read and written whole: one field costs a script far less than twenty
-- (see save). st is that array as unpacked: the scripts name its fields
-- (st.f), and schema.go's stateFields numbers them. Its fields:
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
--   ex       when the host's keys expire (µs, see save)
--   fl       1: F may hold breaker failures
--   pr       when a request last waited for a token or a slot (0: never):
--            demand pressed on the host, whichever worker's it was
--   pg       when expired leases were last dropped from L (see inflight)
--   nl       at least as many as L's leases (absent: not known): its last
--            count, plus the leases admit added since (releases, expiry
--            and purges only lower the count). Below the cap, admit need
--            not count (a ZCOUNT). Only admit adds leases, and a worker
--            of a version without nl writes the state without it.
--   le       no lease in L expires before this (µs; absent: not known;
--            inf: L has none): leases added since lower it (see expire)

-- A call's keys and arguments (kb, ab, an above) are begun by begin. The host's state and the call's names below are set by
-- begin for each call; the functions after it read them.
local KEYS, ARGV = KEYS, ARGV
-- Where the call's keys and arguments begin in KEYS and ARGV (kb, ab:
-- KEYS[kb + 1] is its first key, ARGV[ab + 1] its first argument) and
-- its last argument (an): the script's own, or in a merged call each
-- call's in turn (admit.lua), which the calls read in place, not copied.
-- A.<name> is ab + its number in a merged call (schema.go).
local kb, ab, an = 0, 0, #ARGV
local H, F, L, G, S, D, rid, lane
local st, raw, fresh, leased, now, baseRate, baseBurst, idle, pacing, sq0
-- clock is Redis's TIME (µs), read once per script run: the calls a
-- merged call carries run at one instant, as a batch's admissions do.
local clock

-- num is v as a number, d when it is none. '0' and '1', most of the
-- numbers a call carries, are told by their (interned) strings: tonumber
-- parses with strtod, 4 % of an admission's instructions on 1,000 hosts
-- (callgrind, #30). The others are parsed once per script run (nums):
-- a merged call's calls carry the same limits, and tonumber parses each
-- twice (lua_isnumber, then lua_tonumber).
local nums = {}
local function num(v, d)
  if v == '0' then return 0 elseif v == '1' then return 1 end
  local n = nums[v]
  if n then return n end
  n = tonumber(v)
  if n == nil then return d end
  nums[v] = n
  return n
end

local function int(x) return string.format('%.0f', x) end
local function flt(x) return string.format('%.17g', x) end

-- begin loads the call's host and names (KEYS, ARGV). It returns the
-- first reply of a call repeated (below), or nil.
--
-- A mutating script (admit, report) is safe to repeat: its caller names
-- the call (the last ARGV, "<worker>/<n>") and keeps its reply. A call
-- repeated because its reply was lost gets the first reply back and
-- changes nothing again: no second token, no second failure. A worker's
-- admit calls to a host go one after the other on each of its lanes
-- (combine.go), so admit keeps only each lane's last reply, in the host's
-- hash under the field "i<worker>.<lane>" (read and written with the rest
-- of it); a report keeps its reply in KEYS[6], a hash of the replies by
-- name, for a minute after the host's last report (4096 replies at most).
local function begin()
  H, F, L, G, S, D = KEYS[kb + 1], KEYS[kb + 2], KEYS[kb + 3], KEYS[kb + 4], KEYS[kb + 5], KEYS[kb + 6]
  rid, lane = nil, nil
  if D then
    rid = ARGV[an]
    if BATCH then
      lane = 'i' .. (string.match(rid, '^(.*)/') or rid)
    else
      local prev = redis.call('HGET', D, rid)
      if prev then return cmsgpack.unpack(prev) end
    end
  end
  raw = redis.call('HMGET', H, 's', lane or 's') -- as stored, so save writes only what changed
  if lane then
    local prev = raw[2]
    -- "<rid> <reply>": compared in place (no new strings), as nearly
    -- every call finds its lane's previous reply there.
    if prev and string.byte(prev, #rid + 1) == 32 and string.find(prev, rid, 1, true) == 1 then
      return cmsgpack.unpack(string.sub(prev, #rid + 2))
    end
  end
  -- As packed: numbers, strings, nil for absent (no conversion needed).
  if raw[1] then st = {cmsgpack.unpack(raw[1])} else st = {} end
  if st.pg == nil then
    -- A new host (or a state shorter than this one's): the defaults.
    st.c, st.rc, st.pu, st.pw, st.blk = st.c or 0, st.rc or 0, st.pu or 0, st.pw or '', st.blk or ''
    st.cbs, st.cbu, st.cbd, st.lt = st.cbs or 0, st.cbu or 0, st.cbd or 0, st.lt or 0
    st.be, st.bt, st.ln = st.be or 0, st.bt or 0, st.ln or 0
    st.sq, st.lf, st.t0, st.ss, st.rs, st.cc = st.sq or 0, st.lf or 0, st.t0 or 0, st.ss or 0, st.rs or 0, st.cc or 0
    st.ex, st.fl, st.pr, st.pg = st.ex or 0, st.fl or 0, st.pr or 0, st.pg or 0
  end
  -- Absent was once packed as false.
  if st.f == false then st.f = nil end
  if st.r == false then st.r = nil end
  if st.bf == false then st.bf = nil end

  -- fresh names the keys besides the hash this call created, which have
  -- no expiry yet (see save; nil: none, as in most calls); leased the
  -- latest lease expiry it set (µs, admit).
  fresh, leased = nil, 0

  now = ARGV[A.clock]
  if now == '0' then now = 0 else now = num(now, 0) end -- '0' in production: no call of num
  if now <= 0 then
    if not clock then
      local t = redis.call('TIME')
      clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
    end
    -- After a failover to a replica whose clock is behind, time still
    -- only moves forward for the host. (A caller's clock, in tests, is
    -- taken as it is.)
    now = clock
    if now < st.ln then now = st.ln end
  end
  if now > st.ln then st.ln = now end

  baseRate, baseBurst, idle = num(ARGV[A.baseRate], -1), num(ARGV[A.baseBurst], 1), num(ARGV[A.idle], 0)
  if baseBurst < 1 then baseBurst = 1 end
  pacing = ARGV[A.pacing] == '1'
  -- The log's last entry as this call found it, before it appended any: a
  -- replica that heard more than that heard a log since rolled back.
  sq0 = st.sq
end

-- made notes a key k the call created (fresh).
local function made(k)
  if fresh then fresh[#fresh + 1] = k else fresh = {k} end
end

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

-- lateSlack is the most lateness take forgives (µs): package bucket's.
local lateSlack = 2000

-- take takes cost tokens at now, or reserves them if they come within
-- maxWait; it returns whether it did and the wait (until the reserved
-- tokens, or until they would come), and true third when cost is above
-- the burst (never admitted).
--
-- A worker that comes for its token a little after the bucket filled (a
-- timer fired late, the call took its round trip) keeps its place, as in
-- one process's pacing bucket (package bucket, lateSlack): the take counts
-- from the instant the bucket filled, by at most lateSlack and a tenth of
-- a token. Without it, every token of a host at burst 1 lost the asker's
-- lateness: 4 workers at --rate 80 sent 77 req/s, live. A smooth host
-- (--smooth, or a robots.txt Crawl-delay: rc) forgives nothing.
local function take(maxWait, cost, r, b, ei)
  cost = cost or 1
  if not r then r, b = inforce() end -- unless the caller has them (and ei)
  if not ei then ei = interval(r) end
  if ei == 0 then return true, 0 end
  if cost > b then return false, 0, true end
  local f = st.f or now
  if f < now and not (pacing and st.rc == 0 and now - f <= math.min(lateSlack, ei / 10)) then f = now end
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
  if minps > 0 then
    -- The floor's tokens, up to window seconds' worth (without math.min).
    local bf = st.bf + minps * sec
    if bf > minps * window then bf = minps * window end
    st.bf = bf
  end
  if st.be > 0 then st.be = st.be * math.exp(-sec / window) end
end

-- expire drops L's expired leases (their workers were killed) when
-- force says so, or when it last did a second ago or more and one may
-- have expired (st.le); the bound on L's leases (st.nl) falls by as many.
-- Then it notes when the earliest lease left expires: the last member
-- (the greatest score), or a keeper (-inf) when none is left. A host
-- whose leases are given back is not purged every second (a
-- ZREMRANGEBYSCORE that finds nothing), only once its earliest lease
-- since the last purge would have expired.
local function expire(force)
  if force or now - st.pg >= 1000000 and not (st.le and st.le > now) then
    local gone = redis.call('ZREMRANGEBYSCORE', L, -now, '+inf')
    st.pg = now
    if st.nl then st.nl = st.nl - gone end
    local last = redis.call('ZRANGE', L, -1, -1, 'WITHSCORES')
    st.le = math.huge
    if last[2] then st.le = -tonumber(last[2]) end
  end
end

-- inflight returns how many leases L holds (its keeper, at -inf, not
-- counted: see admit.lua). It drops the expired ones first when purge
-- says so, or a second after it last did (expire): a count with expired
-- leases in it can only refuse, never admit more, and a caller whose
-- count would refuse asks again with purge.
local function inflight(purge)
  expire(purge)
  return redis.call('ZCOUNT', L, '(-inf', '+inf')
end

-- failed adds a breaker failure at t to F; unfailed clears F.
local function failed(t)
  if redis.call('LPUSH', F, int(t)) == 1 then made(F) end
  st.fl = 1
end

local function unfailed()
  if st.fl ~= 0 then redis.call('DEL', F) end
  st.fl = 0
end

-- remember keeps a mutating call's reply under its name (see D above)
-- and returns it; for admit, save writes it.
local function remember(out)
  if D and not lane then
    -- Its expiry moves with every report, so a host reported on without
    -- a pause would keep every reply: past 4096 the old ones go (a
    -- call repeated after that long has long been given up).
    if redis.call('HLEN', D) >= 4096 then redis.call('DEL', D) end
    redis.call('HSET', D, rid, cmsgpack.pack(out))
    redis.call('PEXPIRE', D, 60000)
  end
  return out
end

local function save(out)
  -- Kept while anything in it matters, then as long as an idle host is;
  -- a block or a breaker that is not closed is kept a day more; a lease
  -- as long as it lasts. The keys' expiry is set an eighth of the idle
  -- time further than needed (ex), so that most calls need not move it.
  local keep = 0 -- the latest of these, without math.max (a call)
  if st.f and st.f - now > keep then keep = st.f - now end
  if st.pu - now > keep then keep = st.pu - now end
  if st.cbu - now > keep then keep = st.cbu - now end
  keep = keep + idle
  if st.blk ~= '' or st.cbs ~= 0 then keep = keep + 86400000000 end
  if leased - now > keep then keep = leased - now end
  local moved = now + keep > st.ex
  if moved then st.ex = now + keep + math.floor(idle / 8) end
  local e = cmsgpack.pack(unpack(st, 1, NST))
  if lane and out then
    local v = rid .. ' ' .. cmsgpack.pack(out)
    if e ~= raw[1] then redis.call('HSET', H, 's', e, lane, v) else redis.call('HSET', H, lane, v) end
  elseif e ~= raw[1] then
    redis.call('HSET', H, 's', e)
  end
  if moved then
    fresh = {H, L}
    if st.fl ~= 0 then fresh[#fresh + 1] = F end
    if st.sq > 0 then
      fresh[#fresh + 1] = G
      fresh[#fresh + 1] = S
    end
  end
  if fresh then
    local ms = math.ceil((st.ex - now) / 1000)
    for k = 1, #fresh do redis.call('PEXPIRE', fresh[k], ms) end
  end
end
