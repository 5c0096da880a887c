-- unblock: lift the soft block mark of the host whose hash is KEYS[1].
-- Run on its own, without the prelude: it touches that one field only.
-- Returns 1 when there was a mark, 0 when not.
return redis.call('HDEL', KEYS[1], 'blk')
