-- setceiling: set (A.rate > 0) or clear (0) a ceiling: A.why is
-- "crawl-delay" (evenly spaced, burst 1) or another source (a RateLimit
-- ceiling). With A.adaptive the fleet's controller hears the change (the
-- log). Returns setCeilingOut's slots: the rate in force, and whether it
-- (or the burst) changed.
local r0, b0 = inforce()
local c0 = ceilingNow()
local rate = math.max(num(ARGV[A.rate], 0), 0)
if ARGV[A.why] == 'crawl-delay' then st.rc = rate else st.c = rate end
local r1, b1 = inforce()
retime(r0, b0, r1, b1)
if ARGV[A.adaptive] == '1' then logCeiling(c0) end
save()
local out = {}
out[O.rate], out[O.changed] = flt(r1), 0
if r1 ~= r0 or b1 ~= b0 then out[O.changed] = 1 end
return out
