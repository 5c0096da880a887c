-- setceiling: set (ARGV[6] > 0) or clear (0) a ceiling: ARGV[5] is
-- "crawl-delay" (evenly spaced, burst 1) or another source (a RateLimit
-- ceiling). Returns {rate in force, changed (0/1)}.
local r0, b0 = inforce()
local rate = math.max(num(ARGV[6], 0), 0)
if ARGV[5] == 'crawl-delay' then st.rc = rate else st.c = rate end
local r1, b1 = inforce()
retime(r0, b0, r1, b1)
save()
local changed = 0
if r1 ~= r0 or b1 ~= b0 then changed = 1 end
return {flt(r1), changed}
