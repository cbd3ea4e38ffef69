-- Voice previews are made ahead by workers now; no job kind makes them. A
-- `voice.preview` job left waiting by an older release would never be
-- claimed and would count against the operator's concurrent jobs: it is
-- cancelled. These jobs were free (no credits held), so nothing is refunded.
UPDATE jobs SET status = 'cancelled', credit_state = 'refunded', lease_owner = NULL,
    lease_expires_at = NULL, finished_at = updated_at
WHERE kind = 'voice.preview' AND status IN ('queued', 'processing') AND cost = 0;
