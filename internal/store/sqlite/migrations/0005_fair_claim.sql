-- 0005: Claim serves watches fairly. It picks the watches with a due
-- delivery in the order of each one's oldest due delivery and takes a few
-- of each in turn, so one watch's large backlog (a reactivated watch's
-- held notices are released at one timestamp) cannot fill the scan while
-- other watches wait. This index answers "the oldest due deliveries of
-- one watch" with a range read.
CREATE INDEX deliveries_watch_due ON deliveries (watch_id, next_attempt_at, notice_seq)
    WHERE status = 'pending' AND next_attempt_at IS NOT NULL;
