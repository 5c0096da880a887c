-- state: a snapshot, changing nothing. Returns stateOut's slots (schema.go).
local r, b = inforce()
local out = {}
out[O.rate], out[O.tokens], out[O.ceiling] = flt(r), flt(tokens(r, b)), flt(ceilingNow())
out[O.pause], out[O.pauseWhy], out[O.breaker], out[O.breakerUntil] = st.pu, st.pw, st.cbs, st.cbu
out[O.block], out[O.now], out[O.burst] = st.blk, now, b
out[O.leases] = redis.call('ZCOUNT', L, '(-inf', '(' .. int(-now)) -- not L's keeper, nor the expired
out[O.budgetFloor], out[O.budgetEarned], out[O.budgetAt] = flt(st.bf or -1), flt(st.be), st.bt
out[O.conc] = st.cc
return out
