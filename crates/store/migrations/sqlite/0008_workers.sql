-- Live workers and the job kinds each claims: refreshed by every worker as
-- it runs (seen_at), so the API can tell which kinds have a worker.
CREATE TABLE workers (
    id TEXT PRIMARY KEY,
    kinds TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    seen_at INTEGER NOT NULL
);
