-- keep: do A.cost tokens reserved at A.reserved (µs, Redis's clock) still
-- stand? Not when the host is paused or a throttle was heard since: the
-- tokens are then given back. Returns 1 or 0.
local reserved = num(ARGV[A.reserved], 0)
if st.pu > now or st.lt > reserved then
  forgive(math.max(num(ARGV[A.cost], 1), 1))
  save()
  return 0
end
save()
return 1
