-- The duplicate rule's second read finds rows of the fact's subject with the same BM25 terms (then the same
-- meaning signature and a close cosine). Joined on the terms alone, its plan hashed the whole scope: every
-- single store read and compared every row (2.2 ms of a 2,000-row scope, EXPLAIN ANALYZE). The terms' hash is
-- indexed (hash_array_extended is immutable and exact arrays are compared after it), so the read looks the
-- batch's terms up instead. Not partial: the timeline view's branches read closed rows too.
CREATE INDEX user_memories_terms_hash
    ON user_memories (user_id, heroine_id, subject_id, hash_array_extended(terms, 0));
