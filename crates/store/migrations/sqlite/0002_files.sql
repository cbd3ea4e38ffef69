-- Input files uploaded by accounts (media for the capabilities).
CREATE TABLE files (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    filename TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size BIGINT NOT NULL,
    blob_key TEXT NOT NULL,
    duration REAL,
    created_at BIGINT NOT NULL
);
CREATE INDEX files_account ON files (account_id, created_at);
