-- Webhook endpoints of an account: where job events go, which events, and
-- the secret that signs them (Standard Webhooks; kept to sign, shown once).
CREATE TABLE webhook_endpoints (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    url TEXT NOT NULL,
    -- Comma-framed event names: `,job.completed,job.failed,`.
    events TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id, created_at);

-- One event for one endpoint (its id is the `webhook-id` of every
-- attempt), written in the transaction that ends the job: no event is
-- lost to a crash. `payload` is rendered on the first attempt and sent
-- unchanged after. `endpoint_id` is NULL for the job's own `webhookUrl`.
CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    endpoint_id TEXT,
    account_id TEXT NOT NULL,
    job_id TEXT NOT NULL,
    event TEXT NOT NULL,
    payload TEXT,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    lease_until BIGINT,
    last_status BIGINT,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at);

-- A request's own `webhookUrl`: every end of that one job goes there,
-- signed with the account's request secret (one per account, made on
-- first use, readable and rotatable by its admin keys).
ALTER TABLE jobs ADD COLUMN webhook_url TEXT;
CREATE TABLE webhook_secrets (
    account_id TEXT PRIMARY KEY,
    secret TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
