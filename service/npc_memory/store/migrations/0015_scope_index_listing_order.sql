-- The scope index in the listing's order. ListMemories pages a scope newest first by (valid_at DESC, id DESC), the
-- order its cursor compares in; the scope index was (valid_at DESC, id), so no scan of it could give the page in
-- order, and every page sorted the whole scope. Its other readers use only its leading columns (the dialogue
-- rules' newest rows: user_id, heroine_id, valid_at DESC), which this index leads with too.
CREATE INDEX user_memories_scope_listing ON user_memories (user_id, heroine_id, valid_at DESC, id DESC);
DROP INDEX user_memories_scope;
ALTER INDEX user_memories_scope_listing RENAME TO user_memories_scope;
