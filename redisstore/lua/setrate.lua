-- setrate: set the host's own rate to ARGV[5] (req/s), keeping its tokens.
-- Returns the rate in force, under the ceilings (-1: unlimited).
local r0, b0 = inforce()
st.r = num(ARGV[5], st.r)
local r1, b1 = inforce()
retime(r0, b0, r1, b1)
save()
return flt(r1)
