-- report: apply what one attempt came to (a polite.Reading), atomically.
-- ARGV[5] sent (µs, Redis's clock), [6] throttle, [7] its pause (µs),
-- [8] the pause's reason, [9] failure, [10] success, [11] block reason,
-- [12] quota pause (µs), [13] quota ceiling (req/s, 0: none), [14] retry
-- asked, [15] breaker threshold, [16] its window (µs), [17] open delay
-- (µs), [18] longest open delay (µs), [19] jitter cut, [20..22] budget
-- ratio, floor per second, window (s), [23] adaptive (1: the fleet's AIMD
-- tunes the host's rate), [24..27] its floor, ceiling, cut factor and
-- growth per second.
-- Returns {pause moved (µs, -1: no), quota pause moved (0/1), blocked
-- (0/1), breaker from, breaker to, breaker until (µs), quota rate (req/s,
-- "" unchanged), rate (req/s, "" unchanged), retry granted (0/1), now,
-- the rate in force before this report changed it (req/s, -1:
-- unlimited; "" unchanged)}.
local sent, throttle, pauseUs, why = num(ARGV[5], 0), ARGV[6] == '1', num(ARGV[7], 0), ARGV[8]
local failure, success, block = ARGV[9] == '1', ARGV[10] == '1', ARGV[11]
local quotaPause, ceiling, retry = num(ARGV[12], 0), num(ARGV[13], 0), ARGV[14] == '1'
local thr, cbWindow, openDelay, maxOpen, cut = num(ARGV[15], 5), num(ARGV[16], 0), num(ARGV[17], 0), num(ARGV[18], 0), num(ARGV[19], 0)
local ratio, minps, window = num(ARGV[20], 0), num(ARGV[21], 0), num(ARGV[22], 10)
local adaptive = ARGV[23] == '1'
local aMin, aMax, aCut, aGrowth = num(ARGV[24], 0.1), num(ARGV[25], 1000), num(ARGV[26], 0.5), num(ARGV[27], 0.25)

local out = {-1, 0, 0, 0, 0, 0, '', '', 0, now, ''}

-- changed notes a change of the rate in force from r0, the first one this
-- report made being the one before them all.
local function changed(r0)
  if out[11] == '' then out[11] = flt(r0) end
end

-- The fleet's AIMD: the host's own rate, cut once per throttle wave (the
-- wave rule below makes eight workers' 429s of one overshoot one cut), and
-- grown while demand presses on it (the bucket empty when an answer comes:
-- a rate nobody uses is no evidence the host bears more).
local function setOwn(r)
  local r0, b0 = inforce()
  st.r = r
  local r1, b1 = inforce()
  if r1 ~= r0 then
    retime(r0, b0, r1, b1)
    changed(r0)
    out[8] = flt(r1)
  end
end
if adaptive and st.r == nil then
  if baseRate < 0 then st.r = aMax else st.r = math.min(math.max(baseRate, aMin), aMax) end
end

if throttle then
  -- A throttle answering a request sent before the last one was heard is
  -- the same wave: it may lengthen the pause, but counts once.
  failure = sent >= st.lt
  if failure then
    st.lt = now
    if adaptive then
      setOwn(math.max(aMin, st.r * aCut))
      st.ti = now
    end
  end
  if pause(now + pauseUs, why) then out[1] = pauseUs end
  drain()
end
if block ~= '' and st.blk == '' then
  st.blk = block
  out[3] = 1
end
if quotaPause > 0 and pause(now + quotaPause, 'ratelimit') then out[2] = 1 end
if ceiling > 0 then
  local c0 = st.c
  local r0, b0 = inforce()
  st.c = ceiling
  local r1, b1 = inforce()
  if r0 > 0 and r1 > r0 and r1 < r0 * 1.02 then
    st.c = c0 -- cuts are exact; rises under 2 % wait (as the local store's)
  elseif r1 ~= r0 then
    retime(r0, b0, r1, b1)
    changed(r0)
    out[7] = flt(r1)
  end
end

local function open()
  st.cbs, st.cbu = 1, now + jittered(st.cbd, cut)
  redis.call('DEL', F)
end
if st.cbd <= 0 then st.cbd = openDelay end
if failure or success then
  if st.cbs == 0 then
    out[4], out[5] = 0, 0
    if success then
      redis.call('DEL', F)
    else
      redis.call('LPUSH', F, int(now))
      redis.call('LTRIM', F, 0, thr - 1)
      if redis.call('LLEN', F) >= thr and now - num(redis.call('LINDEX', F, thr - 1), 0) <= cbWindow then
        open()
        out[5], out[6] = 1, st.cbu
      end
    end
  elseif st.cbs == 2 then
    out[4] = 2
    if success then
      st.cbs, st.cbd = 0, openDelay
      redis.call('DEL', F)
    else
      if st.cbd > maxOpen / 2 then st.cbd = maxOpen else st.cbd = st.cbd * 2 end
      open()
      out[5], out[6] = 1, st.cbu
    end
  else
    out[4], out[5] = 1, 1 -- reports while open are ignored
  end
end

if adaptive and success and st.r < aMax then
  local r, b = inforce()
  if tokens(r, b) < 1 then
    local since = math.max(st.ti, st.lt)
    local grown = math.min(aMax, st.r * (1 + aGrowth * (now - since) / 1e6))
    -- Rises under 2 % wait for more time to pass (as the local store's).
    if since == 0 then
      st.ti = now
    elseif grown >= st.r * 1.02 then
      setOwn(grown)
      st.ti = now
    end
  end
end

if retry then
  advance(ratio, minps, window)
  if st.be + st.bf >= 1 - 1e-9 then
    if st.be >= 1 then
      st.be = st.be - 1
    else
      st.bf = math.max(0, st.bf - (1 - st.be))
      st.be = 0
    end
    out[9] = 1
  end
end
save()
return remember(out)
