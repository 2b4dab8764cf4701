-- Each timeline carries its lineage, written once when a load makes it (store/timelines.py BRANCH): the timeline
-- ids from the root (1) to itself, ascending, and the system time up to which the view of this timeline sees each
-- of them (the last, itself: 'infinity'). A timeline's parent and branch time never change, so neither does its
-- lineage. Reads took it by walking parent links, one step per load the player ever made, in every statement: a
-- player who reloaded 300 times paid 28 ms per statement on a one-player table (each step a scan of the player's
-- timelines) before any row was read (docs/guide/game-time.md, "A player who reloads"). Ascending ids let a row find its
-- timeline's place by binary search (width_bucket, store/view.py): a child is always made after its parent, and a
-- timeline's id is one more than the player's largest.
ALTER TABLE timelines ADD COLUMN lineage bigint[];
ALTER TABLE timelines ADD COLUMN lineage_upto timestamptz[];

-- Existing timelines, parents before children (a parent's id is smaller), one statement per timeline: plain
-- statements that route by player, as a distributed table needs.
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT user_id, timeline_id, parent_id, branched_at FROM timelines ORDER BY user_id, timeline_id LOOP
        UPDATE timelines c
        SET lineage = COALESCE(p.lineage, ARRAY[t.parent_id]) || t.timeline_id,
            lineage_upto = ARRAY(SELECT LEAST(a.upto, t.branched_at)
                                 FROM unnest(COALESCE(p.lineage_upto, ARRAY['infinity'::timestamptz]))
                                      WITH ORDINALITY AS a (upto, n)
                                 ORDER BY a.n) || 'infinity'::timestamptz
        FROM (SELECT 1) one
        LEFT JOIN timelines p ON p.user_id = t.user_id AND p.timeline_id = t.parent_id
        WHERE c.user_id = t.user_id AND c.timeline_id = t.timeline_id;
    END LOOP;
END
$$;

ALTER TABLE timelines ALTER COLUMN lineage SET NOT NULL;
ALTER TABLE timelines ALTER COLUMN lineage_upto SET NOT NULL;
