-- A turn stored by StoreDialogue records its dialogue, its position there (from 0) and the name the game shows for
-- its speaker. NULL for every other row: a fact stored by StoreMemories is never a turn. A turn is found again by its
-- place (the idempotency of a resend, the context of the next request's first turn, a re-embed's neighbours).
ALTER TABLE user_memories ADD COLUMN dialogue_id text;
ALTER TABLE user_memories ADD COLUMN dialogue_position int;
ALTER TABLE user_memories ADD COLUMN speaker_name text;
CREATE INDEX user_memories_dialogue ON user_memories (user_id, heroine_id, dialogue_id, dialogue_position)
    WHERE dialogue_id IS NOT NULL;
