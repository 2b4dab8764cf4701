-- Shared knowledge. A memory is private to the heroine who heard it (the row's heroine_id) unless stored as
-- 'shared': then every heroine of the same player may see it, when a read asks for shared memories. The row
-- stays in the hearing heroine's scope, so heroine_id and created_at say who heard it and when.
ALTER TABLE user_memories
    ADD COLUMN visibility text NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'shared'));

-- A read that includes shared memories looks at the player's shared rows of every heroine.
CREATE INDEX user_memories_shared ON user_memories (user_id) WHERE visibility = 'shared';
