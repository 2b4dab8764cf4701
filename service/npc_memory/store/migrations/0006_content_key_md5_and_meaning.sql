-- A content_key can pass btree's 2,704-byte limit on an index row: 2,000 Hangul characters are 6,000 bytes
-- (and NFKC expands some characters), so such facts could not be stored. Index the key's md5 instead; the
-- duplicate query looks rows up by md5(content_key) and then compares the key itself.
DROP INDEX IF EXISTS user_memories_content_key;
CREATE INDEX user_memories_content_key_md5 ON user_memories (user_id, heroine_id, subject_id, md5(content_key))
    WHERE invalid_at IS NULL;

-- The meaning signature of each fact (text/meaning.py): the morphemes BM25 terms drop that change what a fact
-- states (negation, tense, auxiliaries like -고 싶다, adverbs like 자주/가끔, counts). The duplicate rule needs
-- equal signatures besides equal terms. Rows written before have none (NULL): they are duplicates only of
-- their own normalised text, never merged on a near match.
ALTER TABLE user_memories ADD COLUMN meaning text[];
