-- Shared by every script of the crawl frontier (frontier.go), prepended
-- to each. A script touches one virtual shard s: every key it names
-- begins with <prefix>{f<s>}:, so in a Redis Cluster all of them share
-- one slot. KEYS, in this order:
--   U    hash: URL fingerprint (8 raw bytes) -> record (below)
--   LS   sorted set: leased fingerprint -> lease expiry (µs)
--   RDY  sorted set: host with queued URLs -> when it is next due (µs)
--   DLY  sorted set: delayed fingerprint -> when it is due (µs)
--   C    hash: the shard's counters (pending, leased, done, dead, late,
--        reclaimed), the fencing token counter (tok), outcomes (o:<x>),
--        per worker committed (wc:<w>) and leases out (wl:<w>)
--   R    hash: fingerprint -> committed result (see res)
--   DEAD hash: fingerprint -> why it is a dead letter
--   HP   hash: host -> URLs not yet done (queued, delayed or leased)
--   HD   hash: host -> URLs done
--   HDEF hash: host -> no lease before (µs), from DeferHost
--   WR   hash: host -> its place in the lanes' round (0..9)
-- A host's queues are lists of fingerprints, one per lane, at
-- <prefix>{f<s>}:q<lane>:<host>. They cannot be named in KEYS (a lease
-- picks its hosts inside the script), but carry the shard's hash tag, so
-- they live in the same slot as the keys that are.
--
-- ARGV[1] is the caller's clock in µs (0: Redis's TIME, as in
-- production). Times are integer µs written with %.0f, never tostring
-- (which keeps 14 digits).
local U, LS, RDY, DLY, C, R, DEAD, HP, HD, HDEF, WR =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local base = string.sub(U, 1, -2)

local function int(x) return string.format('%.0f', x) end

local now = tonumber(ARGV[1]) or 0
if now <= 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function qkey(lane, host) return base .. 'q' .. lane .. ':' .. host end

-- A record: state, lane (one digit each), leases "," token "," [ext]
-- #host ":" host #worker ":" worker url. States: q queued, d delayed,
-- l leased, x dead letter, c committed. A committed record keeps only
-- state, lane, leases and token: its URL (and ext) lives in its result.
--
-- ext, discovery's (issue 35), is "+" depth "," #found_on ":" found_on:
-- how many links were followed to the URL, and the URL of the page that
-- named it. It is written only when either is set, so a listed URL's
-- record is as it was before discovery, and a record from before it
-- (none has a "+" there: a host's length follows the token) reads as
-- depth 0, found on "".
local function ext(depth, found)
  if depth == 0 and found == '' then return '' end
  return '+' .. int(depth) .. ',' .. #found .. ':' .. found
end

-- unext reads ext at p, if there is one: depth, found_on and where what
-- follows it begins; nil if it is malformed.
local function unext(v, p)
  if string.sub(v, p, p) ~= '+' then return 0, '', p end
  local d, fl, q = string.match(v, '^%+(%d+),(%d+):()', p)
  if not d then return nil end
  fl = tonumber(fl)
  if q + fl - 1 > #v then return nil end
  return tonumber(d), string.sub(v, q, q + fl - 1), q + fl
end

local function dec(v)
  if not v then return nil end
  local st, ln, leases, tok, p = string.match(v, '^(%a)(%d)(%d+),(%d+),()')
  if not st then return nil end
  local r = {st = st, lane = tonumber(ln), leases = tonumber(leases), tok = tonumber(tok),
    host = '', worker = '', url = '', depth = 0, found = ''}
  if st == 'c' then return r end
  local depth, found, p1 = unext(v, p)
  if not depth then return nil end
  r.depth, r.found, p = depth, found, p1
  local hl, q = string.match(v, '^(%d+):()', p)
  if not hl then return nil end
  hl = tonumber(hl)
  r.host = string.sub(v, q, q + hl - 1)
  local wl, q2 = string.match(v, '^(%d+):()', q + hl)
  if not wl then return nil end
  wl = tonumber(wl)
  r.worker = string.sub(v, q2, q2 + wl - 1)
  r.url = string.sub(v, q2 + wl)
  return r
end

local function enc(r)
  local head = r.st .. r.lane .. int(r.leases) .. ',' .. int(r.tok) .. ','
  if r.st == 'c' then return head end
  return head .. ext(r.depth, r.found) .. #r.host .. ':' .. r.host .. #r.worker .. ':' .. r.worker .. r.url
end

-- A result: lane leases "," token "," [ext] then host, url, worker and
-- outcome, each as #x ":" x, then the caller's record (JSON). ext is the
-- record's: Retry queues the URL again at the depth it had.
local function res(r, tok, worker, outcome, record)
  return r.lane .. int(r.leases) .. ',' .. int(tok) .. ',' .. ext(r.depth, r.found) .. #r.host .. ':' .. r.host ..
    #r.url .. ':' .. r.url .. #worker .. ':' .. worker .. #outcome .. ':' .. outcome .. record
end

local function unres(v)
  if not v then return nil end
  local ln, leases, tok, p = string.match(v, '^(%d)(%d+),(%d+),()')
  if not ln then return nil end
  local depth, found, p1 = unext(v, p)
  if not depth then return nil end
  p = p1
  local f = {}
  for i = 1, 4 do
    local n, q = string.match(v, '^(%d+):()', p)
    if not n then return nil end
    n = tonumber(n)
    f[i] = string.sub(v, q, q + n - 1)
    p = q + n
  end
  return {lane = tonumber(ln), leases = tonumber(leases), tok = tonumber(tok), host = f[1], url = f[2],
    worker = f[3], outcome = f[4], depth = depth, found = found}
end

local function count(field, d)
  if d ~= 0 then redis.call('HINCRBY', C, field, d) end
end

-- hostCount adds d to host's count in h, and drops the field at zero.
local function hostCount(h, host, d)
  if d ~= 0 and redis.call('HINCRBY', h, host, d) <= 0 then redis.call('HDEL', h, host) end
end

-- ready makes host due at `at` (no earlier than a DeferHost) unless it is
-- already in the ready set, whose due time (a HostGap) then stands.
local function ready(host, at)
  local d = tonumber(redis.call('HGET', HDEF, host) or '0') or 0
  if d > at then at = d end
  redis.call('ZADD', RDY, 'NX', int(at), host)
end

-- queue puts a record back in its host's queue: at the front (first) or
-- the back.
local function queue(fp, r, first)
  r.st, r.worker = 'q', ''
  redis.call('HSET', U, fp, enc(r))
  redis.call(first and 'LPUSH' or 'RPUSH', qkey(r.lane, r.host), fp)
  ready(r.host, now)
end
