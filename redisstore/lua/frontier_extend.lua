-- extend: ARGV[2] the lease's time to live (µs), then pairs of
-- fingerprint and token. A lease whose token is current runs ttl from
-- now. Returns now, then 1 per renewed lease, 0 per lost one.
local ttl, out = tonumber(ARGV[2]), {}
out[1] = int(now)
for i = 3, #ARGV, 2 do
  local fp = ARGV[i]
  local r = dec(redis.call('HGET', U, fp))
  if r and r.st == 'l' and r.tok == tonumber(ARGV[i + 1]) then
    redis.call('ZADD', LS, 'XX', int(now + ttl), fp)
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
