-- Avatars uploaded by accounts (the built-in catalog lives in code).
CREATE TABLE avatars (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    gender TEXT NOT NULL,
    -- A JSON array of lower-case labels.
    labels TEXT NOT NULL,
    video_key TEXT NOT NULL,
    poster_key TEXT NOT NULL,
    content_type TEXT NOT NULL,
    width BIGINT NOT NULL,
    height BIGINT NOT NULL,
    duration REAL NOT NULL,
    fps REAL NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX avatars_account ON avatars (account_id, created_at);
