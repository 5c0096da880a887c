-- setrate: set the host's own rate to A.rate (req/s), keeping its tokens.
-- A rate the fleet's controller set follows log entry A.seq, and comes
-- with its cap on requests in flight (A.conc): a replica that is behind
-- (an older entry than the rate in force follows), or follows another log
-- (A.epoch, its t0) or entries the log does not have, changes nothing.
-- Returns the rate in force, under the ceilings (-1: unlimited).
local seq = num(ARGV[A.seq], 0)
if seq == 0 or (seq >= st.rs and seq <= st.sq and num(ARGV[A.epoch], 0) == st.t0) then
  local r0, b0 = inforce()
  st.r = num(ARGV[A.rate], st.r)
  if seq > 0 then st.rs, st.cc = seq, math.max(num(ARGV[A.conc], 0), 0) end
  local r1, b1 = inforce()
  retime(r0, b0, r1, b1)
  save()
end
return flt(inforce())
