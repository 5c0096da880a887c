-- admit: a batch of admissions to one host, and the releases of its leases
-- that came meanwhile, atomically: each admission in turn asks the block
-- mark, the pause, the breaker, the fleet's in-flight cap and a token
-- (taken now, or reserved within the wait it allows). A worker sends the
-- admissions its callers made to one host while its previous call was out:
-- one call serves them all.
-- Quiet reports (Store.Report: a success or a signal that needs no answer)
-- ride with it, heard before the admissions.
-- Arguments (schema.go, admitArgs): the settings, then the number of
-- releases r, then r lease ids, then the number of quiet
-- reports m, then m reports of NITEM fields each (R.<name>), then the
-- number of admissions n, then n quadruples: max wait (µs), first attempt
-- (1: earns the retry budget its share), lease id, cost (tokens); then,
-- if the worker asks for credit (see credit below), its size c and c
-- lease ids.
-- Returns admitHead's slots (B.<name>: now, the breaker's state after the
-- call, with reports the controller's log the replica has not heard, and
-- the credit given),
-- then n results, each admitOut's slots in a row (NOUT of them, not a
-- table of its own: each nested table cost Redis its own conversion,
-- #30): code 0
-- granted (µs: wait for the reserved token), 1 blocked, 2 paused (µs
-- left), 3 breaker open (µs left), 4 no token within the wait (µs until
-- one), 5 every in-flight slot leased, 6 the cost exceeds the burst (µs:
-- 0); and spare (1: the bucket was full and a slot left over, so neither
-- the rate nor the cap held the request back).
-- The run's settings (M, read at the end), a call's cap, and its leases:
-- those live when the call began (counted once: nil until then) and those
-- its grants take, leased together at the end; purged: counted again
-- without the expired leases (once a call at most). Declared here, with
-- the functions below, once per script run, not once per call.
local keepBlocked, openDelay, cut, ratio, minps, window, leaseTTL, adaptive, creditLife
local cap, counted, ng, purged, out
-- grants: ZADD's arguments for the ng leases a call's grants take (a
-- score and a lease id each, 1 to 2 * ng), then L's keepers; one table
-- for the run, its entries past those of the call ignored (a table made
-- for each call grew, and was rebuilt, two or three times).
local grants = {}
-- bounded: counted is st.nl, a bound on L's leases, not a count (see
-- admitCall).
local bounded
-- A lease's score in L is minus its expiry (an integer, µs), given to
-- ZADD as a string written with %d: a number given to redis.call is
-- written with %.17g, some 5k instructions for 16 digits, a sixth of a
-- hot host's admissions (callgrind); with %d they cost 7 % less.
local format = string.format
-- hotLeases: past this many leases, L gets hotKeeper (see admitCall).
local hotLeases, hotKeeper = 32, 'hot-host-keeper-longer-than-a-listpack-member-may-be-64-bytes-or-more'

-- hear hears a quiet report whose fields start at ARGV[j], as report.lua
-- hears a success (or an answer that is neither success nor failure) and
-- its signal.
local function hear(j)
  if st.cbd <= 0 then st.cbd = openDelay end
  if ARGV[j + R.success] == '1' then
    if st.cbs == 2 then
      st.cbs, st.cbd = 0, openDelay
      unfailed()
    elseif st.cbs == 0 then
      unfailed()
    end
  end
  if not adaptive then return end
  local kind = num(ARGV[j + R.kind], -1)
  if kind >= 0 and kind <= 3 then
    logAppend(kind .. ' ' .. int(num(ARGV[j + R.latency], 0)) .. ' ' .. int(num(ARGV[j + R.wait], 0)) .. ' ' ..
      int(num(ARGV[j + R.spare], 0)), num(ARGV[j + R.at], 0))
  end
end

-- admitOne returns an admission's result: admitOut's slots in their
-- order (code, micros, reason, spare).
local function admitOne(maxWait, first, id, cost)
  if st.blk ~= '' and not keepBlocked then return 1, 0, st.blk, 0 end
  if st.pu > now then return 2, st.pu - now, st.pw, 0 end
  -- The breaker is asked without taking its probe, which goes to the
  -- request that gets a token.
  if st.cbs ~= 0 and now < st.cbu then return 3, st.cbu - now, '', 0 end
  local live = 0
  if cap > 0 then
    if counted == nil then counted = inflight(false) end
    live = counted + ng
    if live >= cap and not purged then
      -- Full, perhaps of expired leases: counted again without them.
      counted, purged = inflight(true), true
      live = counted + ng
    end
    if live >= cap then
      st.pr = now
      return 5, 0, '', 0
    end
  end
  local rr, bb = inforce()
  local ei = interval(rr)
  -- Spare: the bucket full, a slot left over, and no request (of any
  -- worker) waited for a token or a slot within two token intervals (10
  -- ms to 1 s): neither the rate nor the cap held this one back.
  local spare = 0
  -- The bucket is full: tokens(rr, bb) >= bb, told without its calls.
  local full = ei == 0 or st.f == nil or st.f <= now or bb - (st.f - now) / ei >= bb
  if full and (cap == 0 or live + 1 < cap) then
    spare = 1
    if st.pr ~= 0 then
      local win = 2 * ei
      if win < 10000 then win = 10000 elseif win > 1000000 then win = 1000000 end
      if now - st.pr <= win then spare = 0 end
    end
  end
  local ok, wait, over = take(maxWait, cost, rr, bb, ei)
  if over then return 6, 0, '', 0 end
  if not ok then
    st.pr = now
    return 4, wait, '', 0
  end
  if wait > 0 then st.pr = now end
  if st.cbs ~= 0 then
    -- Open with its delay over, or half-open with its probe presumed
    -- lost: this request is the probe.
    if st.cbd <= 0 then st.cbd = openDelay end
    st.cbs, st.cbu = 2, now + jittered(st.cbd, cut)
  end
  if cap > 0 then
    -- The slot is held from now, through the wait for a reserved token
    -- (a score Redis writes exactly: an integer below 2^53). Scored minus
    -- its expiry, a call's grants each a microsecond later than the one
    -- before: ZADD, which walks a small set (a listpack) from its start to
    -- the member's place, finds it at once, as L's newest. Scored by
    -- expiry, each walked the whole set: with 64 requests in flight to a
    -- hot host, 13 % of Redis's instructions per request (callgrind, #30).
    local u = now + wait + leaseTTL + ng
    ng = ng + 1
    grants[2 * ng - 1], grants[2 * ng] = format('%d', -u), id
    if u > leased then leased = u end
  end
  if first then
    advance(ratio, minps, window)
    if ratio > 0 then st.be = st.be + ratio end
  end
  return 0, wait, '', spare
end

-- creditSpan: a credit's tokens must come within it at the rate in force
-- (µs): used up to creditLife late, they let the host see at most that
-- much of its rate early. creditShare: a credit's slots with those in
-- flight take at most this share of the cap.
local creditSpan, creditShare = 1000, 4

-- credit gives the worker c tokens, and with a cap c in-flight slots
-- (their lease ids at ARGV[ci + 1] on), beyond the call's n admissions
-- (their results from out[NHEAD + 1] on), for the requests it makes to
-- the host within creditLife (see credit.go); it returns c, or 0 when the
-- host has less to spare: all of the call's admissions granted without a
-- wait, no block, pause or breaker, no demand pressed within a second,
-- the tokens due within creditSpan and the slots a small share of the cap.
local function credit(c, ci, n)
  for k = 0, n - 1 do
    local o = NHEAD + NOUT * k
    if out[o + O.code] ~= 0 or out[o + O.micros] ~= 0 then return 0 end
  end
  if st.blk ~= '' or st.pu > now or st.cbs ~= 0 or (st.pr ~= 0 and now - st.pr <= 1000000) then return 0 end
  local rr = inforce()
  if rr >= 0 and interval(rr) * c > creditSpan then return 0 end
  if cap > 0 then
    if counted == nil or bounded and (counted + ng + c) * creditShare > cap then
      counted, bounded = inflight(false), false
    end
    if (counted + ng + c) * creditShare > cap then return 0 end
  end
  local ok, wait = take(0, c)
  if not ok or wait > 0 then return 0 end
  if cap > 0 then
    -- Each slot leased as an admission's is, for creditLife longer.
    for k = 1, c do
      local u = now + creditLife + leaseTTL + ng
      ng = ng + 1
      grants[2 * ng - 1], grants[2 * ng] = format('%d', -u), ARGV[ci + k]
      leased = math.max(leased, u)
    end
  end
  return c
end

local function admitCall()
  cap = num(ARGV[A.cap], 0)
  if adaptive then
    logStart()
    if st.rs == 0 then
      -- The controller has written nothing yet: its cold start's rate and
      -- cap stand, as one process's do from the host's first request.
      local initRate, initConc = num(ARGV[A.initRate], 0), num(ARGV[A.initConc], 0)
      if st.r == nil and initRate > 0 then
        local r0, b0 = inforce()
        st.r = initRate
        local r1, b1 = inforce()
        retime(r0, b0, r1, b1)
      end
      if st.cc == 0 and initConc > 0 then st.cc = initConc end
    end
  end
  -- The fleet's controller caps the requests in flight too (Little's law
  -- at the host's unloaded latency), under the configured cap.
  if st.cc > 0 and (cap == 0 or st.cc < cap) then cap = st.cc end
  if ARGV[A.pressed] == '1' then st.pr = now end -- a request of the caller's waited for the rate (NoteDemand)
  -- The counts and numbers below are nearly always '0' or '1', told
  -- here without a call of num (each call of a Lua function costs some
  -- 300 instructions; callgrind).
  local earned = ARGV[A.earned]
  if earned == '0' then earned = 0 else earned = num(earned, 0) end
  if earned > 0 then
    -- The first attempts the worker's credit admitted earn the retry
    -- budget their share, as admitOne's first attempts do.
    advance(ratio, minps, window)
    if ratio > 0 then st.be = st.be + ratio * earned end
  end

  -- The tail, after the controller's arguments (which only a run with
  -- it carries, the last of admitArgs): the releases first.
  local i = A.epoch
  if adaptive then i = A.initConc + 1 end
  local r = ARGV[i]
  if r == '0' then r = 0 else r = num(r, 0) end
  if r > 0 then
    local gone = redis.call('ZREM', L, unpack(ARGV, i + 1, i + r))
    if st.nl then st.nl = st.nl - gone end
  end
  i = i + r + 1

  local m = ARGV[i]
  if m == '0' then m = 0 else m = num(m, 0) end
  for k = 0, m - 1 do hear(i + 1 + k * NITEM) end
  i = i + 1 + m * NITEM

  local n = ARGV[i]
  if n == '1' then n = 1 else n = num(n, 0) end
  i = i + 1

  counted, ng, purged, bounded = nil, 0, false, false
  if cap > 0 and st.nl and st.nl + n + 1 < cap and st.nl + n <= hotLeases then
    -- L holds at most st.nl leases: with every admission of the call
    -- granted, still under the cap. The admissions go by the bound, as they
    -- would by the count (ZCOUNT): none is refused for a slot, none's
    -- spare is lost. Expired leases are dropped as a count drops them.
    -- (A host that may have more than hotLeases is counted: see below.)
    expire(false)
    counted, bounded = st.nl, true
  end
  out = {[B.now] = now, [B.breaker] = 0, [B.failures] = 0, [B.log] = 0, [B.credit] = 0}
  for k = 0, n - 1 do
    local j, o = i + 4 * k, NHEAD + NOUT * k
    local maxWait, cost = ARGV[j], ARGV[j + 3]
    if maxWait == '0' then maxWait = 0 else maxWait = num(maxWait, 0) end
    if cost == '1' then cost = 1 else cost = math.max(num(cost, 1), 1) end
    out[o + O.code], out[o + O.micros], out[o + O.reason], out[o + O.spare] =
      admitOne(maxWait, ARGV[j + 1] == '1', ARGV[j + 2], cost)
  end
  -- After the admissions, the credit asked for (absent in a call that
  -- asks none): its size, then its slots' lease ids.
  local ci = i + 4 * n
  if n > 0 and ci < an then
    local c = num(ARGV[ci], 0)
    if c > 0 then out[B.credit] = credit(c, ci, n) end
  end
  out[B.breaker], out[B.failures] = st.cbs, st.fl
  local n = ng
  if n > 0 then
    local z = 2 * n -- ZADD's arguments
    -- With the leases, L's keeper: the empty member at -inf, which no
    -- release or expiry removes and no count counts (inflight). Without
    -- it, releases that empty L delete it, and nearly every admission to
    -- a host of a few requests in flight created it again, its expiry to
    -- be set again (a PEXPIRE more). L is new only when the keeper is.
    grants[z + 1], grants[z + 2] = '-inf', ''
    z = z + 2
    if bounded and counted + n > hotLeases then counted, bounded = inflight(false), false end
    if counted + n > hotLeases then
      -- A host this busy gets a second keeper, longer than a small set's
      -- members may be (64 bytes), which turns L from a listpack, whose
      -- every ZADD and ZREM walks it to find the member, into a skiplist
      -- with a dict (for as long as L lives): a hot host's 64 requests in
      -- flight cost 15 % fewer instructions a request (callgrind, #30). A
      -- host with a few leases stays a listpack: 80 bytes against 1 KB.
      grants[z + 1], grants[z + 2] = '-inf', hotKeeper
      z = z + 2
    end
    if redis.call('ZADD', L, unpack(grants, 1, z)) > n then made(L) end
    -- None of them expires before leaseTTL from now.
    if st.le and now + leaseTTL < st.le then st.le = now + leaseTTL end
  end
  if counted then st.nl = counted + n end
  local seen = -2
  if adaptive then seen = num(ARGV[A.seen], -2) end
  if seen ~= -2 then
    -- The reports' signals are in the log: the replica hears them, and any
    -- other worker's since its last call (as report.lua answers).
    local epoch, snapSeq = num(ARGV[A.epoch], 0), num(ARGV[A.snapSeq], 0)
    if snapSeq > st.ss and snapSeq <= sq0 and epoch == st.t0 and ARGV[A.snap] ~= '' then
      snapshot(ARGV[A.snap])
      st.ss = snapSeq
    end
    out[B.log] = catchup(epoch, seen)
  end
  save(out)
  return out
end

-- The script runs a merged call: ARGV[1] is how many calls it carries,
-- then the run's settings (M.<name>, schema.go's runArgs), then each call:
-- its kind ('a' an admit call, on six keys: the host's, as
-- every script's, and D; 'r' a release, on the host's lease set: each
-- argument a lease id to give back), its number of arguments, and those.
-- The keys are the calls' in turn. A worker merges the calls it has for
-- one Redis node (pipe.go): one script run carries them all (and reads
-- TIME once). Returns one reply per call.
local calls, replies = ARGV, {}
keepBlocked, openDelay, cut = calls[M.keepBlocked] == '1', num(calls[M.openDelay], 0), num(calls[M.cut], 0)
ratio, minps, window = num(calls[M.budgetRatio], 0), num(calls[M.budgetMin], 0), num(calls[M.budgetWindow], 10)
leaseTTL, adaptive, creditLife = num(calls[M.leaseTTL], 0), calls[M.adaptive] == '1', num(calls[M.creditLife], 0)
local ki, ai = 1, 2 + NRUN
for c = 1, num(calls[1], 0) do
  local n = num(calls[ai + 1], 0)
  ab, an = ai + 1, ai + 1 + n -- its arguments: ARGV[ab + 1] to ARGV[an]
  if calls[ai] == 'r' then
    replies[c] = 0
    if n > 0 then replies[c] = redis.call('ZREM', KEYS[ki], unpack(ARGV, ab + 1, an)) end
    ki = ki + 1
  else
    kb = ki - 1 -- its keys: KEYS[kb + 1] to KEYS[kb + 6]
    ki = ki + 6
    replies[c] = begin() or admitCall()
  end
  ai = ai + 2 + n
end
return replies
