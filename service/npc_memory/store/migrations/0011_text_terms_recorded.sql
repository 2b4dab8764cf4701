-- The text options that made the stored BM25 terms are recorded like the embedding model (store/settings.py).
-- A database that already holds rows made them with no stored-side option ('plain'); an empty one records
-- the configured options at the service's first start.
INSERT INTO service_settings (key, value)
SELECT 'text_terms', 'plain' WHERE EXISTS (SELECT 1 FROM user_memories)
ON CONFLICT (key) DO NOTHING;
