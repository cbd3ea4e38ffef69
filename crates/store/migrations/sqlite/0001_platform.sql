CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    is_operator BIGINT NOT NULL DEFAULT 0,
    balance BIGINT NOT NULL DEFAULT 0,
    reserved BIGINT NOT NULL DEFAULT 0,
    used BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,
    level TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    revoked_at BIGINT
);
CREATE INDEX api_keys_account ON api_keys (account_id, created_at);

-- Append-only: every change of a balance is one row here.
CREATE TABLE credit_ledger (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    job_id TEXT,
    entry TEXT NOT NULL,
    amount BIGINT NOT NULL,
    balance_after BIGINT NOT NULL,
    note TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX credit_ledger_account ON credit_ledger (account_id, id);

-- The queue is this table: claimed with a lease, heartbeated, re-queued when
-- the lease expires.
CREATE TABLE jobs (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    payload TEXT NOT NULL,
    result TEXT,
    error TEXT,
    progress BIGINT NOT NULL DEFAULT 0,
    cost BIGINT NOT NULL,
    credit_state TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    max_attempts BIGINT NOT NULL,
    timeout_ms BIGINT NOT NULL,
    lease_owner TEXT,
    lease_expires_at BIGINT,
    idempotency_key TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    started_at BIGINT,
    finished_at BIGINT
);
CREATE INDEX jobs_queue ON jobs (status, created_at);
CREATE INDEX jobs_account ON jobs (account_id, created_at);
CREATE UNIQUE INDEX jobs_idempotency ON jobs (account_id, idempotency_key);

CREATE TABLE idempotency_keys (
    account_id TEXT NOT NULL,
    key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    response_status BIGINT,
    response_body TEXT,
    locked_until BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (account_id, key)
);

CREATE TABLE settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
