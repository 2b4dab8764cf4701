-- Save points and timelines (docs/guide/game-time.md). A load copies nothing: every row records the timeline it was
-- written on and the system time of its writing (created_at) and of an in-place close (closed_at); a
-- timeline's view is its own rows plus its ancestors' rows as known at the branch points.
--
-- created_at and the new system-time columns default to clock_timestamp(), taken after the writer holds the
-- player's lock (store/timelines.py), so "written before the save point" means "committed before it".
ALTER TABLE user_memories ADD COLUMN timeline_id bigint NOT NULL DEFAULT 1;
ALTER TABLE user_memories ADD COLUMN closed_at timestamptz;
ALTER TABLE user_memories ALTER COLUMN created_at SET DEFAULT clock_timestamp();
ALTER TABLE user_memories ALTER COLUMN updated_at SET DEFAULT clock_timestamp();
-- Rows closed before this migration: the last change is the best record of when.
UPDATE user_memories SET closed_at = updated_at WHERE invalid_at IS NOT NULL;

-- The timelines of a player other than the root (1): each branches from a parent as it was at branched_at.
CREATE TABLE timelines (
    user_id      text NOT NULL,
    timeline_id  bigint NOT NULL CHECK (timeline_id > 1),
    parent_id    bigint NOT NULL,
    branched_at  timestamptz NOT NULL,
    -- The save point whose load made this timeline.
    save_id      text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (user_id, timeline_id)
);

-- A player who has ever saved: the timeline their reads and writes use. No row means the root timeline and
-- no save point, and changes to rows are made in place (the cheap case).
CREATE TABLE player_state (
    user_id     text PRIMARY KEY,
    timeline_id bigint NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- A save slot: the player's timeline and the system time of the save.
CREATE TABLE save_points (
    user_id     text NOT NULL,
    save_id     text NOT NULL,
    timeline_id bigint NOT NULL,
    saved_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (user_id, save_id)
);

-- Once a player has a save point, a row is never changed in place again: each close, importance raise or
-- re-evaluation is a new entry here, on the timeline that made it, carrying the row's changeable columns as
-- they are after the change. A view takes, per row, the newest entry of its own lineage (store/timelines.py).
CREATE TABLE memory_changes (
    user_id       text NOT NULL,
    heroine_id    text NOT NULL,
    memory_id     uuid NOT NULL,
    seq           bigint GENERATED ALWAYS AS IDENTITY,
    timeline_id   bigint NOT NULL,
    changed_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    importance    smallint NOT NULL CHECK (importance BETWEEN 1 AND 10),
    tier          text NOT NULL CHECK (tier IN ('gist', 'knowledge', 'source')),
    metadata      jsonb NOT NULL,
    invalid_at    timestamptz,
    close_reason  text CHECK (close_reason IN ('superseded', 'invalidated', 'retired')),
    superseded_by uuid,
    PRIMARY KEY (user_id, heroine_id, memory_id, seq),
    FOREIGN KEY (user_id, memory_id) REFERENCES user_memories (user_id, id) ON DELETE CASCADE
);
