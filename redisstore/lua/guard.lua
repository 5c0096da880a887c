-- The guard's admission for every level of one request, in one step (issue
-- 14): GCRA, as bucket.Bucket and guard's Memory store do it, in integer
-- microseconds. A request needs a yes from every level; when any says no,
-- no key is written.
--
-- KEYS[1..n] are the levels' buckets (identity, tenant, global, those in
-- play), each a string holding the instant (µs since the Unix epoch) it is
-- full again, expiring then: a missing key is a full bucket.
-- ARGV[1] is the cost, ARGV[2] the caller's clock in µs (0: Redis's TIME,
-- as in production), then for each key its interval (µs per token, rounded
-- up) and tau (burst * interval).
--
-- Returns {allowed (1/0), now, debt_1, ..., debt_n}: each level's debt
-- (µs until it is full again) after the admission, or as found when
-- refused.
local cost = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
if now <= 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local n = #KEYS
local debt, nxt = {}, {}
local ok = 1
for i = 1, n do
  local iv = tonumber(ARGV[1 + 2 * i])
  local tau = tonumber(ARGV[2 + 2 * i])
  local tat = tonumber(redis.call('GET', KEYS[i]) or '0') or 0
  local d = tat - now
  if d < 0 then d = 0 end
  debt[i] = d
  nxt[i] = d + cost * iv
  if nxt[i] > tau then ok = 0 end
end
if ok == 1 then
  for i = 1, n do
    redis.call('SET', KEYS[i], string.format('%.0f', now + nxt[i]), 'PX', math.floor(nxt[i] / 1000) + 1)
    debt[i] = nxt[i]
  end
end
local out = {ok, now}
for i = 1, n do out[#out + 1] = debt[i] end
return out
