-- Every scope with rows gets its counter row. Migration 0013 made a counter when a scope was first written after it,
-- so a scope written only before it has rows (stamped version 0) and no counter. A scope's own sync reads a missing
-- counter as version 0, but a sharing scope's sync (store/scope_sync.py) finds the player's other scopes through
-- their counters: a scope without one would hide its shared rows. Version 0 is what those rows are stamped with, so
-- a counter made here changes nothing a server holds; its epoch is new, which only makes a server holding the scope
-- read it whole once more.
INSERT INTO scope_versions (user_id, heroine_id, version)
SELECT DISTINCT m.user_id, m.heroine_id, 0 FROM user_memories m
ON CONFLICT (user_id, heroine_id) DO NOTHING;
