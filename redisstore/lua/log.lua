-- The fleet controller's log (part of the prelude). The fleet runs polite's
-- own rate controller (package adaptive), in Go, as identical replicas:
-- every worker's report of a host appends the signal it heard to the
-- host's log (G), in the order Redis ran them, stamped with Redis's clock;
-- each worker's replica replays the log, so every replica hears the same
-- signals at the same instants and comes to the same rate. The worker that
-- is furthest along writes that rate (setrate, with the entry it follows);
-- a worker that joins late, or fell too far behind, restores a snapshot a
-- replica wrote (S) and replays the entries after it.
--
-- An entry is "<µs> <kind> <latency µs> <wait µs> <spare 0/1>" for a
-- signal (kind an adaptive.Kind), or "<µs> m <ceiling req/s>" for a change
-- of the host's lowest ceiling (0: none). Entries are numbered from 1;
-- st.lf is the first kept, st.sq the last.

-- logKeep entries are kept for replicas that fall behind, more while no
-- snapshot covers them, never more than logMax.
local logKeep, logMax = 512, 4096

-- sq0 (set by begin) is the log's last entry as the call found it.

-- logStart begins the host's log at now, unless it has begun: at the
-- host's first admission, as one process's controller is born when its
-- host is first asked for (its clock starts there).
local function logStart()
  if st.t0 ~= 0 then return end
  st.t0, st.lf, st.sq, st.ss, st.rs, st.cc = now, 1, 0, 0, 0, 0
  redis.call('DEL', G, S)
end

-- logAppend appends entry stamped at (µs; now if absent or later: a
-- report that rode with a later call is stamped when its answer came, as
-- one process's controller hears it).
local function logAppend(entry, at)
  logStart()
  st.sq = st.sq + 1
  local stamp = now
  if at and at > 0 and at < now then stamp = at end
  if redis.call('RPUSH', G, int(stamp) .. ' ' .. entry) == 1 then made(G) end
  local n = st.sq - st.lf + 1
  local drop = 0
  if n > logKeep and st.ss >= st.lf then
    drop = math.min(st.ss + 1 - st.lf, n - logKeep)
  end
  if n - drop > logMax then drop = n - logMax end
  if drop > 0 then
    redis.call('LTRIM', G, drop, -1)
    st.lf = st.lf + drop
  end
end

-- snapshot stores a snapshot of the controller (S).
local function snapshot(v)
  redis.call('SET', S, v)
  made(S)
end

-- ceilingNow is the lowest ceiling in force (0: none).
local function ceilingNow()
  local c = 0
  if st.c > 0 then c = st.c end
  if st.rc > 0 and (c == 0 or st.rc < c) then c = st.rc end
  return c
end

-- logCeiling appends a change of the lowest ceiling, if it changed.
local function logCeiling(c0)
  local c1 = ceilingNow()
  if c1 ~= c0 then logAppend('m ' .. flt(c1)) end
end

-- catchup returns what a replica that follows the log of epoch (its t0)
-- up to entry seen needs to be current (the LO slots): the entries after
-- seen; or, when it follows another epoch, is new (seen < 0) or fell behind
-- what is kept, a snapshot and the entries after it (or, without one, the
-- log from its first kept entry, which a replica can only approximate).
local function catchup(epoch, seen)
  local out = {}
  out[LO.epoch], out[LO.last], out[LO.snapSeq], out[LO.snap], out[LO.from] = st.t0, st.sq, 0, '', 0
  out[LO.rate], out[LO.rateSeq], out[LO.stored], out[LO.conc], out[LO.reset], out[LO.entries] = '', st.rs, st.ss, st.cc, 0, {}
  if st.sq == 0 then return out end
  -- Another log, or one rolled back past what the replica heard (Redis
  -- restarted from a dump, or failed over to a replica behind it): the
  -- replica starts again.
  if epoch ~= st.t0 or seen > sq0 then
    if seen >= 0 then out[LO.reset] = 1 end
    seen = -1
  end
  local from = seen + 1
  if seen < 0 or from < st.lf then
    if st.lf == 1 then
      from = 1
    elseif st.ss >= st.lf - 1 and st.ss > 0 then
      local snap = redis.call('GET', S)
      if snap then
        out[LO.snapSeq], out[LO.snap] = st.ss, snap
        from = st.ss + 1
      else
        from = st.lf
      end
    else
      from = st.lf
    end
  end
  out[LO.from] = from
  if st.r ~= nil then out[LO.rate] = flt(st.r) end
  if from <= st.sq then
    out[LO.entries] = redis.call('LRANGE', G, from - st.lf, -1)
  end
  return out
end
