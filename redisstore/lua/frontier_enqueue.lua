-- enqueue: ARGV[2..] are groups, one per host and lane: host, lane, n,
-- then n pairs of fingerprint and normalized URL. A URL whose fingerprint
-- the shard knows (queued, leased, done or dead) is skipped, so enqueue
-- is idempotent. Returns how many were added.
local added, i = 0, 2
while i <= #ARGV do
  local host, lane, n = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  i = i + 3
  local head = 'q' .. lane .. '0,0,' .. #host .. ':' .. host .. '0:'
  local fresh = {}
  for j = 0, n - 1 do
    local fp = ARGV[i + 2 * j]
    if redis.call('HSETNX', U, fp, head .. ARGV[i + 2 * j + 1]) == 1 then fresh[#fresh + 1] = fp end
  end
  i = i + 2 * n
  if #fresh > 0 then
    redis.call('RPUSH', qkey(lane, host), unpack(fresh))
    ready(host, now)
    hostCount(HP, host, #fresh)
    added = added + #fresh
  end
end
count('pending', added)
return added
