-- Single-use tokens that open one live session (`POST /v1/tokens`), for
-- browsers, which cannot set headers. Only a token's hash is kept; it
-- acts for the key that minted it (and dies with it), for one kind of
-- session, once, until it expires.
CREATE TABLE session_tokens (
    token_hash TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    key_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT
);
CREATE INDEX session_tokens_account ON session_tokens (account_id, expires_at);
