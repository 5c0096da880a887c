-- state: a snapshot, changing nothing. Returns {rate in force, tokens,
-- ceiling, pause end, pause reason, breaker state, breaker until, block,
-- now, burst, live leases, the retry budget's floor tokens (-1: never
-- used), earned tokens, and when they were brought up to date}.
local r, b = inforce()
local c = 0
if st.c > 0 then c = st.c end
if st.rc > 0 and (c == 0 or st.rc < c) then c = st.rc end
return {flt(r), flt(tokens(r, b)), flt(c), st.pu, st.pw, st.cbs, st.cbu, st.blk, now, b,
  redis.call('ZCOUNT', L, '(' .. int(now), '+inf'), flt(st.bf or -1), flt(st.be), st.bt}
