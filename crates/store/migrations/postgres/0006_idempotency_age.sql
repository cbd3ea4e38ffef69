-- Idempotency records expire (24 h by default): found by age.
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);
