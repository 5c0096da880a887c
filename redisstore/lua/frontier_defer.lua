-- defer: no lease of host (ARGV[2]) for ARGV[3] µs from now (Redis's
-- clock: a worker's may be off). Never earlier than a deferral already in
-- force.
local host, untl = ARGV[2], now + math.max(tonumber(ARGV[3]) or 0, 0)
local d = tonumber(redis.call('HGET', HDEF, host) or '0') or 0
if untl > d then redis.call('HSET', HDEF, host, int(untl)) end
redis.call('ZADD', RDY, 'XX', 'GT', int(untl), host)
return 0
