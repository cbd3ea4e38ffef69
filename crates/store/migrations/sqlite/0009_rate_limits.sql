-- Request counters of each API key for the current minute and hour
-- windows (Unix seconds of their start), shared by every API process.
CREATE TABLE rate_limits (
    key_id TEXT PRIMARY KEY,
    minute_start INTEGER NOT NULL,
    minute_count INTEGER NOT NULL,
    hour_start INTEGER NOT NULL,
    hour_count INTEGER NOT NULL
);
