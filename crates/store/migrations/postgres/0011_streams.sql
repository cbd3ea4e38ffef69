-- The encoded audio of a streamed job, chunk by chunk as its worker makes
-- it, for the API process that relays it to the client. Keyed by the
-- attempt: a retried job streams anew, and a relay follows one attempt.
-- Unlogged: transient (read within seconds, deleted when relayed and swept
-- after an hour); a database crash ends the streams open at the time.
CREATE UNLOGGED TABLE stream_chunks (
    job_id TEXT NOT NULL,
    attempt BIGINT NOT NULL,
    seq BIGINT NOT NULL,
    data BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (job_id, attempt, seq)
);
CREATE INDEX stream_chunks_age ON stream_chunks (created_at);

-- Bytes a streamed job's client took before it closed the stream early
-- (NULL while it listens): the worker stops and charges what was sent.
ALTER TABLE jobs ADD COLUMN stream_delivered BIGINT;
