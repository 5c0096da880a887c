-- release: give back in-flight leases (every ARGV) of the host whose lease
-- set is KEYS[3]. Run on its own, without the prelude: releasing reads and
-- writes nothing else, and the set's expiry already covers its leases.
return redis.call('ZREM', KEYS[3], unpack(ARGV))
