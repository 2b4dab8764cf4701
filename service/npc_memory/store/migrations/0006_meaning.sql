-- The meaning signature of each fact (text/meaning.py): the morphemes BM25 terms drop that change what a fact
-- states (negation, tense, auxiliaries like -고 싶다, adverbs like 자주/가끔, counts). The duplicate rule needs
-- equal signatures besides equal terms. Rows written before have none (NULL): they are duplicates only of
-- their own normalised text, never merged on a near match.
ALTER TABLE user_memories ADD COLUMN meaning text[];
