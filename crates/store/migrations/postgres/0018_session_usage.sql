-- What a live session had delivered (seconds of sound received, characters
-- spoken) at its worker's last heartbeat: a session whose worker died is
-- charged these instead of refunded.
ALTER TABLE jobs ADD COLUMN used_units DOUBLE PRECISION;
