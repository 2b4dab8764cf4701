-- Spread the schema over a Citus cluster by player. Run once on the coordinator, after `npc-memory migrate`,
-- as a role allowed to call Citus's functions (`psql -f distribute.sql`, or store.citus.distribute_for_citus).
-- Safe to run again: a table already distributed is skipped. Existing rows are moved to the workers.
--
-- Every table of the schema is named here (tests/store/test_schema_distribution.py checks it), except the
-- migration ledger schema_migrations, which only the coordinator reads.

-- user_memories and memory_changes carry the scope-version triggers (migrations 0013, 0016). Citus distributes a
-- table with triggers only when told they are safe: each trigger runs on the worker holding the row's shard and
-- writes only the counter row of the same player and heroine in scope_versions, co-located below, so on that
-- same worker.
SET citus.enable_unsafe_triggers = on;

-- Service-wide settings (the embedding model of the stored vectors): no player, a few rows, read at start.
-- A reference table is copied to every node.
SELECT create_reference_table('service_settings')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'service_settings'::regclass);

-- The memories, hash-distributed on the player: a scope (player x heroine) lives in one shard, so every
-- search, store and read by scope runs on one worker.
SELECT create_distributed_table('user_memories', 'user_id')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'user_memories'::regclass);

-- Idempotency keys next to the player's memories (co-located), so a store's key and its rows commit together
-- on one worker.
SELECT create_distributed_table('store_requests', 'user_id', colocate_with => 'user_memories')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'store_requests'::regclass);

-- Links and expansion state next to the player's memories (co-located): both ends of a link are one scope's
-- rows, so the foreign keys hold inside one shard.
SELECT create_distributed_table('memory_links', 'user_id', colocate_with => 'user_memories')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'memory_links'::regclass);

SELECT create_distributed_table('expand_state', 'user_id', colocate_with => 'user_memories')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'expand_state'::regclass);
-- Timelines, save points and per-timeline changes live with the player's memories (co-located), so a load,
-- a save and a search's view of them run on the player's worker.
SELECT create_distributed_table('timelines', 'user_id', colocate_with => 'user_memories')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'timelines'::regclass);
SELECT create_distributed_table('player_state', 'user_id', colocate_with => 'user_memories')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'player_state'::regclass);
SELECT create_distributed_table('save_points', 'user_id', colocate_with => 'user_memories')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'save_points'::regclass);
SELECT create_distributed_table('memory_changes', 'user_id', colocate_with => 'user_memories')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'memory_changes'::regclass);
-- Each scope's change counter (migration 0013) next to its rows, so the trigger that stamps a row's version runs on
-- the row's worker.
SELECT create_distributed_table('scope_versions', 'user_id', colocate_with => 'user_memories')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'scope_versions'::regclass);
-- Extraction jobs next to the player's memories (co-located), so a job's completion and the memories it
-- writes commit together on one worker.
SELECT create_distributed_table('extraction_jobs', 'user_id', colocate_with => 'user_memories')
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'extraction_jobs'::regclass);
