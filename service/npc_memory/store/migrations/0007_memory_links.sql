-- Links between memories of one scope, and the per-scope state of step-by-step expansion.
--
-- memory_links: one row per (from, to, kind). RELATED_TO links come from StoreMemories' `related` or from
-- ExpandMemory; DERIVED_FROM links from `parents` (knowledge distilled from sources, a gist from knowledge).
-- `depth` is the expansion step that found the link (0 when the game named it), `via` the keyword or the
-- memory id it was found through. The primary key makes a second discovery a no-op (ON CONFLICT DO NOTHING).
--
-- Both ends reference (user_id, heroine_id, id) of user_memories, so the schema itself refuses a link across
-- players or heroines; ON DELETE CASCADE makes ForgetPlayer's DELETE erase the links with the rows.
ALTER TABLE user_memories ADD CONSTRAINT user_memories_scope_id_key UNIQUE (user_id, heroine_id, id);

CREATE TABLE memory_links (
    user_id       text NOT NULL,
    heroine_id    text NOT NULL,
    from_id       uuid NOT NULL,
    to_id         uuid NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('related_to', 'derived_from')),
    depth         integer NOT NULL CHECK (depth >= 0),
    via           text NOT NULL DEFAULT '',
    discovered_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, from_id, to_id, kind),
    CHECK (from_id <> to_id),
    FOREIGN KEY (user_id, heroine_id, from_id) REFERENCES user_memories (user_id, heroine_id, id) ON DELETE CASCADE,
    FOREIGN KEY (user_id, heroine_id, to_id) REFERENCES user_memories (user_id, heroine_id, id) ON DELETE CASCADE
);

-- Links are followed both ways (search hops, a memory's children), and the cascade looks up by to_id.
CREATE INDEX memory_links_to ON memory_links (user_id, to_id);

-- The memory a scope expanded last and the depth it reached: "expand again" needs no state in the client.
CREATE TABLE expand_state (
    user_id    text NOT NULL,
    heroine_id text NOT NULL,
    memory_id  uuid NOT NULL,
    depth      integer NOT NULL CHECK (depth >= 1),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, heroine_id),
    FOREIGN KEY (user_id, heroine_id, memory_id) REFERENCES user_memories (user_id, heroine_id, id) ON DELETE CASCADE
);
