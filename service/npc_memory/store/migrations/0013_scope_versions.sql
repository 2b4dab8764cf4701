-- A per-scope change counter, so a server can keep a scope's rows in memory and bring them up to date with only
-- the rows changed since it last looked (store/scope_cache.py), in the same round trip that checks them.
--
-- Every insert or update of a memory row takes the next version of its scope and stamps it on the row. The
-- version is an upsert of the scope's counter row, whose row lock is held to commit: two transactions writing one
-- scope take their versions in commit order, so a reader that sees version V has seen every row stamped <= V, and
-- "rows stamped > V" is exactly what changed after it. A delete or a TRUNCATE cannot be read that way (the row is
-- gone): it starts a new epoch, and a reader that sees another epoch than the one it holds reads the scope again.
-- Epochs come from one sequence, so a counter row deleted (ForgetPlayer) and made again never repeats an epoch.
CREATE SEQUENCE scope_epochs;
CREATE TABLE scope_versions (
    user_id    text NOT NULL,
    heroine_id text NOT NULL,
    version    bigint NOT NULL,
    epoch      bigint NOT NULL DEFAULT nextval('scope_epochs'),
    PRIMARY KEY (user_id, heroine_id)
);

ALTER TABLE user_memories ADD COLUMN scope_version bigint NOT NULL DEFAULT 0;
CREATE INDEX user_memories_scope_version ON user_memories (user_id, heroine_id, scope_version);

-- A transaction takes one version per scope, however many rows it writes: the rows of a statement are nearly always
-- one scope's, so the last scope stamped in this transaction and its version are kept in two transaction-local
-- settings. (Bumping the counter for every row made a batch of n rows update one row n times in one transaction:
-- a version chain each update walks again.) An update first: the upsert's insert arm would draw an epoch from the
-- sequence on every call.
CREATE FUNCTION stamp_scope_version() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    scope_key text := pg_current_xact_id()::text || ':' || length(NEW.user_id) || ':' || NEW.user_id
                      || NEW.heroine_id;
BEGIN
    IF current_setting('npc_memory.stamped_scope', true) = scope_key THEN
        NEW.scope_version := current_setting('npc_memory.stamped_version')::bigint;
        RETURN NEW;
    END IF;
    UPDATE scope_versions SET version = version + 1
    WHERE user_id = NEW.user_id AND heroine_id = NEW.heroine_id
    RETURNING version INTO NEW.scope_version;
    IF NOT FOUND THEN
        INSERT INTO scope_versions AS s (user_id, heroine_id, version)
        VALUES (NEW.user_id, NEW.heroine_id, 1)
        ON CONFLICT (user_id, heroine_id) DO UPDATE SET version = s.version + 1
        RETURNING s.version INTO NEW.scope_version;
    END IF;
    PERFORM set_config('npc_memory.stamped_scope', scope_key, true),
            set_config('npc_memory.stamped_version', NEW.scope_version::text, true);
    RETURN NEW;
END
$$;

CREATE TRIGGER user_memories_scope_version
    BEFORE INSERT OR UPDATE ON user_memories
    FOR EACH ROW EXECUTE FUNCTION stamp_scope_version();

-- Scopes in a fixed order, so two statements deleting from several scopes lock their counters alike.
CREATE FUNCTION reset_scope_versions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO scope_versions AS s (user_id, heroine_id, version)
    SELECT DISTINCT g.user_id, g.heroine_id, 1 FROM gone g ORDER BY 1, 2
    ON CONFLICT (user_id, heroine_id) DO UPDATE SET version = s.version + 1, epoch = nextval('scope_epochs');
    RETURN NULL;
END
$$;

CREATE TRIGGER user_memories_scope_reset
    AFTER DELETE ON user_memories
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION reset_scope_versions();

CREATE FUNCTION reset_every_scope_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE scope_versions SET version = version + 1, epoch = nextval('scope_epochs');
    RETURN NULL;
END
$$;

CREATE TRIGGER user_memories_scope_truncate
    AFTER TRUNCATE ON user_memories
    FOR EACH STATEMENT EXECUTE FUNCTION reset_every_scope_version();
