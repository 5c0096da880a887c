-- cancel: give back a token granted to a request that will not use it, as
-- far as the bucket is in debt.
forgive()
save()
return 1
