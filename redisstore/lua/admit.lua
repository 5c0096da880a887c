-- admit: one admission, atomically: the block mark, the pause, the breaker
-- and a token (taken now, or reserved within the wait allowed).
-- ARGV[5] max wait (µs), [6] first attempt (1: earns the retry budget its
-- share), [7] keep blocked (1: a block does not refuse), [8] open delay (µs),
-- [9] jitter cut, [10..12] budget ratio, floor per second, window (s),
-- [13] the fleet's cap on requests in flight (0: none), [14] how long a
-- lease lives (µs), [15] the lease's id.
-- Returns {code, µs, now, reason}: code 0 granted (µs: wait for the
-- reserved token), 1 blocked, 2 paused (µs left), 3 breaker open (µs left),
-- 4 no token within the wait (µs until one), 5 every in-flight slot leased.
local maxWait, first, keepBlocked = num(ARGV[5], 0), ARGV[6] == '1', ARGV[7] == '1'
local openDelay, cut = num(ARGV[8], 0), num(ARGV[9], 0)
local ratio, minps, window = num(ARGV[10], 0), num(ARGV[11], 0), num(ARGV[12], 10)
local cap, leaseTTL, lease = num(ARGV[13], 0), num(ARGV[14], 0), ARGV[15]

if st.blk ~= '' and not keepBlocked then
  save()
  return {1, 0, now, st.blk}
end
if st.pu > now then
  save()
  return {2, st.pu - now, now, st.pw}
end
-- The breaker is asked without taking its probe, which goes to the request
-- that gets a token.
if st.cbs ~= 0 and now < st.cbu then
  save()
  return {3, st.cbu - now, now, ''}
end
if cap > 0 and inflight() >= cap then
  save()
  return {5, 0, now, ''}
end
local ok, wait = take(maxWait)
if not ok then
  save()
  return {4, wait, now, ''}
end
if st.cbs ~= 0 then
  -- Open with its delay over, or half-open with its probe presumed lost:
  -- this request is the probe.
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
save()
return {0, wait, now, ''}
