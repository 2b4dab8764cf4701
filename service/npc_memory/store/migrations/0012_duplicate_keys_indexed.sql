-- The duplicate rule's read (store/writes.py) looks up, for each fact of a batch, the rows of its subject with the
-- same normalised text, and those with the same BM25 terms (then the same meaning signature and a close cosine).
-- Joined on the terms alone, its plan hashed the whole scope: every single store read and compared every row
-- (2.2 ms of a 2,000-row scope, EXPLAIN ANALYZE). The terms' hash is indexed (hash_array_extended is immutable;
-- the exact arrays are compared after it), so the read looks the batch's terms up instead.
CREATE INDEX user_memories_terms_hash
    ON user_memories (user_id, heroine_id, subject_id, hash_array_extended(terms, 0));
-- Neither index is partial: a player who saved reads through the timeline view's branches, where a row's
-- invalid_at is the view's (a close may postdate the save), so an index only of rows valid now cannot serve it;
-- the content key's index (0006) was, and such a player's lookup by text read the subject's every row.
DROP INDEX user_memories_content_key_md5;
CREATE INDEX user_memories_content_key_md5 ON user_memories (user_id, heroine_id, subject_id, md5(content_key));
