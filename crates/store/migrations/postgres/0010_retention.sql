-- The retention sweep finds finished jobs and old uploads by age.
CREATE INDEX jobs_finished_age ON jobs (updated_at);
CREATE INDEX files_age ON files (created_at);
