-- Where a worker that runs live sessions (`stt.realtime`) takes the API's
-- relay connections: host:port, NULL for a worker without session slots.
ALTER TABLE workers ADD COLUMN sessions_at TEXT;
