-- Fair shares: the claim counts each account's running jobs and finds
-- when its last job started.
CREATE INDEX jobs_account_status ON jobs (account_id, status);
CREATE INDEX jobs_account_started ON jobs (account_id, started_at);
