-- keep: do ARGV[6] tokens reserved at ARGV[5] (µs, Redis's clock) still
-- stand? Not when the host is paused or a throttle was heard since: the
-- tokens are then given back. Returns 1 or 0.
local reserved = num(ARGV[5], 0)
if st.pu > now or st.lt > reserved then
  forgive(math.max(num(ARGV[6], 1), 1))
  save()
  return 0
end
save()
return 1
