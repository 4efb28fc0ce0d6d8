-- 0006: attempts are counted when they begin, and each claim carries a
-- token (issue 15, defect 4). A lease that expires mid-attempt and is
-- claimed again is then a new attempt with the next number and a new
-- claim_token; Complete applies the outcome of the attempt holding the
-- current token to the schedule and still records a stale attempt's
-- outcome (a success delivers, a failure is noted in last_error).
-- claim_token is NULL when no attempt is in flight. Rows leased before this
-- migration have no token and counted finished attempts only; Recover
-- releases them without uncounting.
ALTER TABLE deliveries ADD COLUMN claim_token TEXT;
