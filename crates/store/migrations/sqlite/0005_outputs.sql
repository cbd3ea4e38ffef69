-- The files a job produced, registered by its pipeline (JSON list of
-- {field, key, content_type, size}); result URLs are made from it only.
ALTER TABLE jobs ADD COLUMN outputs TEXT;
