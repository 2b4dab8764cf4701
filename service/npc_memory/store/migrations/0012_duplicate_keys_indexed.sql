-- The duplicate rule's read (store/writes.py) looks up, for each fact of a batch, the rows of its subject with the
-- same normalised text, and those with the same BM25 terms (then the same meaning signature and a close cosine).
-- Joined on the terms alone, its plan hashed the whole scope: every single store read and compared every row
-- (2.2 ms of a 2,000-row scope, EXPLAIN ANALYZE). The terms' hash is indexed (hash_array_extended is immutable;
-- the exact arrays are compared after it), so the read looks the batch's terms up instead.
--
-- Both key indexes lead with the key, not the scope: an index leading with (user_id, heroine_id) is also a way to
-- read a whole scope, and a generic plan made while the table had no statistics (estimating one row a scope)
-- took the text key's index for the dialogue rules' latest-row read, reading the scope in no order and filtering
-- it instead of reading the scope index's newest rows (500 rows removed per store in benchmarks.dialogue_write).
-- Neither is partial: a player who saved reads through the timeline view's branches, where a row's invalid_at is
-- the view's (a close may postdate the save), so an index only of rows valid now cannot serve it; the text
-- key's index (0006) was, and such a player's lookup by text read the subject's every row.
CREATE INDEX user_memories_terms_hash
    ON user_memories (hash_array_extended(terms, 0), user_id, heroine_id, subject_id);
DROP INDEX user_memories_content_key_md5;
CREATE INDEX user_memories_content_key_md5 ON user_memories (md5(content_key), user_id, heroine_id, subject_id);
