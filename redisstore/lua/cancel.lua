-- cancel: give back A.cost tokens granted to a request that will not use
-- them, as far as the bucket is in debt.
forgive(math.max(num(ARGV[A.cost], 1), 1))
save()
return 1
