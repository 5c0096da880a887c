-- unblock: lift the host's soft block mark. Returns 1 when there was a
-- mark, 0 when not.
if st.blk == '' then return 0 end
st.blk = ''
save()
return 1
