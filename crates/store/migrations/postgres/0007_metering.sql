-- Jobs keep the units their hold was priced on and the price per unit, so
-- a job that measures what it processed settles on the measurement.
ALTER TABLE jobs ADD COLUMN units DOUBLE PRECISION;
ALTER TABLE jobs ADD COLUMN unit_price DOUBLE PRECISION;
