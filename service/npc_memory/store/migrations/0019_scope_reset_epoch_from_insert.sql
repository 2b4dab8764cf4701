-- The reset trigger of migration 0013 takes a new epoch for each scope whose rows a statement deleted. On a Citus
-- cluster it failed, so ForgetPlayer and DropTimeline did: it drew the epoch in the upsert's DO UPDATE SET, which
-- Citus refuses on a distributed table (only immutable functions there), and it upserted from the statement's
-- transition table in one INSERT ... SELECT, which Citus plans to run elsewhere, where that table does not exist.
-- Now each scope is upserted by its own statement (a statement names one player, routed to the row's own worker),
-- and the epoch comes from the proposed row, whose column default draws it from the same sequence.
CREATE OR REPLACE FUNCTION reset_scope_versions() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    scope record;
BEGIN
    -- Scopes in a fixed order, so two statements deleting from several scopes lock their counters alike.
    FOR scope IN SELECT DISTINCT g.user_id, g.heroine_id FROM gone g ORDER BY 1, 2 LOOP
        INSERT INTO scope_versions AS s (user_id, heroine_id, version)
        VALUES (scope.user_id, scope.heroine_id, 1)
        ON CONFLICT (user_id, heroine_id) DO UPDATE SET version = s.version + 1, epoch = excluded.epoch;
    END LOOP;
    RETURN NULL;
END
$$;
