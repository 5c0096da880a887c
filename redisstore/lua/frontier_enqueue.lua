-- enqueue: ARGV[2..] are groups, one per host, lane, depth and found_on
-- (see ext): host, lane, depth, found_on, n, then n pairs of fingerprint
-- and normalized URL. A URL whose fingerprint the shard knows (queued,
-- leased, done or dead) is skipped, its record untouched, so enqueue is
-- idempotent and a URL keeps the depth it was first enqueued at. The
-- shard's counts remember that it has had an interactive URL (field il):
-- workers ask often for those of the hosts they hold only then (lease).
-- Returns how many were added.
local added, i = 0, 2
while i <= #ARGV do
  local host, lane, depth, found, n = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), ARGV[i + 3],
    tonumber(ARGV[i + 4])
  i = i + 5
  local head = 'q' .. lane .. '0,0,' .. ext(depth, found) .. #host .. ':' .. host .. '0:'
  local fresh = {}
  for j = 0, n - 1 do
    local fp = ARGV[i + 2 * j]
    if redis.call('HSETNX', U, fp, head .. ARGV[i + 2 * j + 1]) == 1 then fresh[#fresh + 1] = fp end
  end
  i = i + 2 * n
  if #fresh > 0 then
    redis.call('RPUSH', qkey(lane, host), unpack(fresh))
    if lane == 1 then redis.call('HSET', C, 'il', 1) end
    ready(host, now)
    hostCount(HP, host, #fresh)
    added = added + #fresh
  end
end
count('pending', added)
return added
