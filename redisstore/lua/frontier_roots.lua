-- roots: KEYS[1] the set of the crawl's scope roots; ARGV[1] how many it
-- may hold at most, ARGV[2..] roots to add, each once. All are added, or,
-- if the set would then hold more than ARGV[1], none: returns how many
-- were added, or minus how many it would have held.
local max, n, new = tonumber(ARGV[1]), redis.call('SCARD', KEYS[1]), {}
for i = 2, #ARGV do
  if redis.call('SISMEMBER', KEYS[1], ARGV[i]) == 0 then new[#new + 1] = ARGV[i] end
end
if n + #new > max then return -(n + #new) end
if #new > 0 then redis.call('SADD', KEYS[1], unpack(new)) end
return #new
