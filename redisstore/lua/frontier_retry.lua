-- retry: ARGV[2..] are pairs of fingerprint and token (0: a dead letter).
-- A dead letter goes back to its queue with no leases; a committed
-- result still under that token is dropped, and its URL queued again.
-- Returns how many were queued.
local n = 0
for i = 2, #ARGV, 2 do
  local fp, tok = ARGV[i], tonumber(ARGV[i + 1])
  local r = dec(redis.call('HGET', U, fp))
  if r and r.st == 'x' and tok == 0 then
    redis.call('HDEL', DEAD, fp)
    r.leases, r.tok = 0, 0
    queue(fp, r, false)
    count('dead', -1)
    count('pending', 1)
    hostCount(HP, r.host, 1)
    n = n + 1
  elseif r and r.st == 'c' and r.tok == tok then
    local v = unres(redis.call('HGET', R, fp))
    if v then
      redis.call('HDEL', R, fp)
      local q = {lane = r.lane, leases = 0, tok = 0, host = v.host, url = v.url, depth = v.depth, found = v.found}
      queue(fp, q, false)
      count('done', -1)
      count('o:' .. v.outcome, -1)
      count('wc:' .. v.worker, -1) -- the worker's result is no longer one
      count('pending', 1)
      hostCount(HD, v.host, -1)
      hostCount(HP, v.host, 1)
      n = n + 1
    end
  end
end
return n
