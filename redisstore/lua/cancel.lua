-- cancel: give back ARGV[5] tokens granted to a request that will not use
-- them, as far as the bucket is in debt.
forgive(math.max(num(ARGV[5], 1), 1))
save()
return 1
