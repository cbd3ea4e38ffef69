-- Voices cloned by accounts from samples (the catalog lives in the engines).
CREATE TABLE voices (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    -- A JSON array of lower-case labels.
    labels TEXT NOT NULL,
    language TEXT NOT NULL,
    gender TEXT NOT NULL,
    -- The analysed voice profile, JSON.
    profile TEXT NOT NULL,
    -- Blob key of a sample to listen to.
    preview_key TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX voices_account ON voices (account_id, created_at);
