-- A change entry counts as a change of its scope. Once a player has saved, a close, an importance raise or a
-- re-evaluation is a memory_changes entry instead of an update of the row (store/changes.py), so the rows a
-- timeline's view shows change without any row of user_memories being stamped. Stamping each entry with its
-- scope's next version (the same function and counter as the rows', migration 0013) lets a server hold a saved
-- player's scope too and bring it up to date with the entries and rows stamped after the version it holds
-- (store/scope_sync.py VIEW_SYNC); deleting entries (a dropped timeline, a forgotten player) starts a new epoch, as
-- deleting rows does. Entries made before this migration keep version 0: a server reads a scope whole first.
ALTER TABLE memory_changes ADD COLUMN scope_version bigint NOT NULL DEFAULT 0;
CREATE INDEX memory_changes_scope_version ON memory_changes (user_id, heroine_id, scope_version);

CREATE TRIGGER memory_changes_scope_version
    BEFORE INSERT ON memory_changes
    FOR EACH ROW EXECUTE FUNCTION stamp_scope_version();

CREATE TRIGGER memory_changes_scope_reset
    AFTER DELETE ON memory_changes
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION reset_scope_versions();
