-- commit: ARGV[2..] are groups of five: fingerprint, token, worker,
-- outcome, record. A commit is accepted when the URL is leased under that
-- token: the result is stored and counted, and the URL is done for good.
-- Committing the same token again is accepted and changes nothing; any
-- other commit (an expired, reclaimed or released lease) is refused and
-- counted late. Returns 1 or 0 per commit.
local out = {}
for i = 2, #ARGV, 5 do
  local fp, tok, worker, outcome = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2], ARGV[i + 3]
  local r = dec(redis.call('HGET', U, fp))
  if r and r.st == 'l' and r.tok == tok then
    redis.call('HSET', R, fp, res(r, tok, worker, outcome, ARGV[i + 4]))
    redis.call('ZREM', LS, fp)
    count('leased', -1)
    count('wl:' .. r.worker, -1)
    count('done', 1)
    count('o:' .. outcome, 1)
    count('wc:' .. worker, 1)
    hostCount(HP, r.host, -1)
    hostCount(HD, r.host, 1)
    r.st = 'c'
    redis.call('HSET', U, fp, enc(r))
    out[#out + 1] = 1
  elseif r and r.st == 'c' and r.tok == tok then
    out[#out + 1] = 1
  else
    count('late', 1)
    out[#out + 1] = 0
  end
end
return out
