-- Every key names the player, so the tables can be spread over many servers by user_id (Citus: see
-- docs/guide/production.md and store/citus/distribute.sql). A distributed database enforces a primary key, a unique
-- constraint or a foreign key only inside one shard, so each must include the distribution column.
--
-- user_memories: the primary key becomes (user_id, id), and superseded_by points at (user_id, id) of the same
-- player. Existing rows satisfy both: ids are unique already, and the write path only ever links versions of
-- one scope. If a database somehow held a cross-player link, adding the foreign key fails and this whole
-- migration rolls back, leaving the old schema in place.
--
-- The foreign key drops ON DELETE SET NULL: Citus refuses SET NULL / SET DEFAULT on a foreign key holding the
-- distribution column, even with PostgreSQL 15's column list. Nothing relies on it: the only DELETE of
-- memories erases a whole player, the older and the newer versions in the same statement.
--
-- Every statement that reads a row by id now also names user_id, so it stays a primary-key lookup.
-- This takes an ACCESS EXCLUSIVE lock on user_memories while the new key's index is built and the foreign key
-- checked: 1.7 s on 1 M rows on the development machine (docs/guide/production.md).
ALTER TABLE user_memories DROP CONSTRAINT user_memories_superseded_by_fkey;
ALTER TABLE user_memories DROP CONSTRAINT user_memories_pkey;
ALTER TABLE user_memories ADD CONSTRAINT user_memories_pkey PRIMARY KEY (user_id, id);
ALTER TABLE user_memories ADD CONSTRAINT user_memories_superseded_by_fkey
    FOREIGN KEY (user_id, superseded_by) REFERENCES user_memories (user_id, id);

-- Following a version chain backwards (and the foreign key's check when a row is deleted) looks up by player.
DROP INDEX user_memories_superseded_by;
CREATE INDEX user_memories_superseded_by ON user_memories (user_id, superseded_by) WHERE superseded_by IS NOT NULL;
