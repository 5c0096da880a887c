-- report: apply what one attempt came to (a polite.Reading), atomically,
-- and, for the fleet's controller, append its signal to the host's log
-- and return the log's entries the reporting worker's replica has not
-- heard (see log.lua). Arguments and reply: schema.go (reportArgs,
-- reportOut).
local sent, throttle, pauseUs, why = num(ARGV[A.sent], 0), ARGV[A.throttle] == '1', num(ARGV[A.pause], 0), ARGV[A.pauseWhy]
local failure, success, block = ARGV[A.failure] == '1', ARGV[A.success] == '1', ARGV[A.block]
local quotaPause, ceiling, retry = num(ARGV[A.quotaPause], 0), num(ARGV[A.ceiling], 0), ARGV[A.retry] == '1'
local thr, cbWindow, openDelay = num(ARGV[A.threshold], 5), num(ARGV[A.window], 0), num(ARGV[A.openDelay], 0)
local maxOpen, cut = num(ARGV[A.maxOpen], 0), num(ARGV[A.cut], 0)
local ratio, minps, window = num(ARGV[A.budgetRatio], 0), num(ARGV[A.budgetMin], 0), num(ARGV[A.budgetWindow], 10)
local adaptive, kind = ARGV[A.adaptive] == '1', num(ARGV[A.kind], -1)

local out = {}
for i = 1, NOUT do out[i] = 0 end
out[O.pause], out[O.quotaRate], out[O.now], out[O.rateFrom] = -1, '', now, ''

-- changed notes a change of the rate in force from r0, the first one this
-- report made being the one before them all.
local function changed(r0)
  if out[O.rateFrom] == '' then out[O.rateFrom] = flt(r0) end
end

if throttle then
  -- A throttle answering a request sent before the last one was heard is
  -- the same wave: it may lengthen the pause, but counts once against the
  -- breaker. (The controller hears every throttle, and reads waves its
  -- own way.)
  failure = sent >= st.lt
  if failure then st.lt = now end
  if pause(now + pauseUs, why) then out[O.pause] = pauseUs end
  drain()
end
if block ~= '' and st.blk == '' then
  st.blk = block
  out[O.blocked] = 1
end
if quotaPause > 0 and pause(now + quotaPause, 'ratelimit') then out[O.quotaPause] = 1 end
local c0 = ceilingNow()
if ceiling > 0 then
  local cPrev = st.c
  local r0, b0 = inforce()
  st.c = ceiling
  local r1, b1 = inforce()
  if r0 > 0 and r1 > r0 and r1 < r0 * 1.02 then
    st.c = cPrev -- cuts are exact; rises under 2 % wait (as the local store's)
  elseif r1 ~= r0 then
    retime(r0, b0, r1, b1)
    changed(r0)
    out[O.quotaRate] = flt(r1)
  end
end

local function open()
  st.cbs, st.cbu = 1, now + jittered(st.cbd, cut)
  unfailed()
end
if st.cbd <= 0 then st.cbd = openDelay end
if failure or success then
  if st.cbs == 0 then
    out[O.from], out[O.to] = 0, 0
    if success then
      unfailed()
    else
      failed(now)
      redis.call('LTRIM', F, 0, thr - 1)
      if redis.call('LLEN', F) >= thr and now - num(redis.call('LINDEX', F, thr - 1), 0) <= cbWindow then
        open()
        out[O.to], out[O.openUntil] = 1, st.cbu
      end
    end
  elseif st.cbs == 2 then
    out[O.from] = 2
    if success then
      st.cbs, st.cbd = 0, openDelay
      unfailed()
    else
      if st.cbd > maxOpen / 2 then st.cbd = maxOpen else st.cbd = st.cbd * 2 end
      open()
      out[O.to], out[O.openUntil] = 1, st.cbu
    end
  else
    out[O.from], out[O.to] = 1, 1 -- reports while open are ignored
  end
end

local earned = num(ARGV[A.earned], 0)
if earned > 0 then
  -- First attempts the worker's credit admitted (credit.go) earn their
  -- share before a retry asks.
  advance(ratio, minps, window)
  if ratio > 0 then st.be = st.be + ratio * earned end
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
    out[O.retry] = 1
  end
end

if adaptive then
  -- The ceiling first: the controller hears it before the answer that
  -- brought it, as the local store tells its controller.
  logCeiling(c0)
  if kind >= 0 and kind <= 3 then
    logAppend(kind .. ' ' .. int(num(ARGV[A.latency], 0)) .. ' ' .. int(num(ARGV[A.wait], 0)) .. ' ' .. int(num(ARGV[A.spare], 0)))
  end
  local epoch, snapSeq = num(ARGV[A.epoch], 0), num(ARGV[A.snapSeq], 0)
  if snapSeq > st.ss and snapSeq <= sq0 and epoch == st.t0 and ARGV[A.snap] ~= '' then
    snapshot(ARGV[A.snap])
    st.ss = snapSeq
  end
  out[O.log] = catchup(epoch, num(ARGV[A.seen], -1))
end
out[O.breaker], out[O.failures] = st.cbs, st.fl
save()
return remember(out)
