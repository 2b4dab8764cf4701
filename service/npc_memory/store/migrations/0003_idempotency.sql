-- The first response of each StoreMemories request_id, per scope, kept for WriteConfig.idempotency_hours.
-- A repeat returns `response` without writing; the key is claimed inside the write transaction, under the
-- scope's advisory lock, so two identical requests racing still write once. ForgetPlayer deletes these too.
CREATE TABLE store_requests (
    user_id     text NOT NULL,
    heroine_id  text NOT NULL,
    request_id  text NOT NULL,
    -- A hash of the request's facts: reusing a request_id for a different request is an error.
    fingerprint text NOT NULL,
    -- The results as [{"memory_id", "outcome", "superseded_ids"}]: ids and outcomes only, never content.
    response    jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, heroine_id, request_id)
);

-- Pruning expired keys scans by age.
CREATE INDEX store_requests_created_at ON store_requests (created_at);
