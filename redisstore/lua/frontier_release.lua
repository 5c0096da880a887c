-- release: ARGV[2] in how long the URLs are due again (µs from now, on
-- Redis's clock: a worker's clock may be off; 0: at once), then pairs of
-- fingerprint and token. A current lease goes back,
-- unfetched: its lease is not counted against MaxLeases. Returns the
-- number released.
local at, n = now + math.max(tonumber(ARGV[2]) or 0, 0), 0
for i = 3, #ARGV, 2 do
  local fp = ARGV[i]
  local r = dec(redis.call('HGET', U, fp))
  if r and r.st == 'l' and r.tok == tonumber(ARGV[i + 1]) then
    redis.call('ZREM', LS, fp)
    count('leased', -1)
    count('wl:' .. r.worker, -1)
    count('pending', 1)
    if r.leases > 0 then r.leases = r.leases - 1 end
    if at > now then
      r.st, r.worker = 'd', ''
      redis.call('HSET', U, fp, enc(r))
      redis.call('ZADD', DLY, int(at), fp)
    else
      queue(fp, r, true)
    end
    n = n + 1
  end
end
return n
