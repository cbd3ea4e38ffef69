-- A job given back to the queue after a retryable failure waits until
-- run_after (epoch ms) before it is claimed again: attempts back off.
ALTER TABLE jobs ADD COLUMN run_after BIGINT;
