-- Request counters of each API key for the current minute and hour
-- windows (Unix seconds of their start), shared by every API process.
-- Unlogged: written on every request, so no WAL flush per request; a
-- database crash forgets the counts of the current window, which only
-- lets a key start that window afresh.
CREATE UNLOGGED TABLE rate_limits (
    key_id TEXT PRIMARY KEY,
    minute_start BIGINT NOT NULL,
    minute_count BIGINT NOT NULL,
    hour_start BIGINT NOT NULL,
    hour_count BIGINT NOT NULL
);
