-- release: give back the in-flight lease ARGV[5].
redis.call('ZREM', L, ARGV[5])
save()
return 1
