-- admit: a batch of admissions to one host, and the releases of its leases
-- that came meanwhile, atomically: each admission in turn asks the block
-- mark, the pause, the breaker, the fleet's in-flight cap and a token
-- (taken now, or reserved within the wait it allows). A worker sends the
-- admissions its callers made to one host while its previous call was out:
-- one call serves them all.
-- ARGV[5] keep blocked (1: a block does not refuse), [6] open delay (µs),
-- [7] jitter cut, [8..10] budget ratio, floor per second, window (s),
-- [11] the fleet's cap on requests in flight (0: none), [12] how long a
-- lease lives (µs), [13] the number of releases r, then r lease ids, then
-- the number of admissions n, then n quadruples: max wait (µs), first
-- attempt (1: earns the retry budget its share), lease id, cost (tokens).
-- Returns {now, n results}, a result {code, µs, reason}: code 0 granted
-- (µs: wait for the reserved token), 1 blocked, 2 paused (µs left), 3
-- breaker open (µs left), 4 no token within the wait (µs until one), 5
-- every in-flight slot leased, 6 the cost exceeds the burst (µs: 0).
local keepBlocked, openDelay, cut = ARGV[5] == '1', num(ARGV[6], 0), num(ARGV[7], 0)
local ratio, minps, window = num(ARGV[8], 0), num(ARGV[9], 0), num(ARGV[10], 10)
local cap, leaseTTL = num(ARGV[11], 0), num(ARGV[12], 0)

local i = 13
local r = num(ARGV[i], 0)
if r > 0 then redis.call('ZREM', L, unpack(ARGV, i + 1, i + r)) end
i = i + r + 1
local n = num(ARGV[i], 0)
i = i + 1

local function admitOne(maxWait, first, lease, cost)
  if st.blk ~= '' and not keepBlocked then return {1, 0, st.blk} end
  if st.pu > now then return {2, st.pu - now, st.pw} end
  -- The breaker is asked without taking its probe, which goes to the
  -- request that gets a token.
  if st.cbs ~= 0 and now < st.cbu then return {3, st.cbu - now, ''} end
  if cap > 0 and inflight() >= cap then return {5, 0, ''} end
  local ok, wait, over = take(maxWait, cost)
  if over then return {6, 0, ''} end
  if not ok then return {4, wait, ''} end
  if st.cbs ~= 0 then
    -- Open with its delay over, or half-open with its probe presumed
    -- lost: this request is the probe.
    if st.cbd <= 0 then st.cbd = openDelay end
    st.cbs, st.cbu = 2, now + jittered(st.cbd, cut)
  end
  if cap > 0 then
    -- The slot is held from now, through the wait for a reserved token.
    redis.call('ZADD', L, int(now + wait + leaseTTL), lease)
  end
  if first then
    advance(ratio, minps, window)
    if ratio > 0 then st.be = st.be + ratio end
  end
  return {0, wait, ''}
end

local out = {now}
for k = 0, n - 1 do
  local j = i + 4 * k
  out[#out + 1] = admitOne(num(ARGV[j], 0), ARGV[j + 1] == '1', ARGV[j + 2], math.max(num(ARGV[j + 3], 1), 1))
end
save()
return remember(out)
