-- The memory table (user_memories): bi-temporal rows (business time valid_at/invalid_at, system time
-- created_at/updated_at), speaker/subject/subject_id on every fact, a slot for supersession, the embedding
-- model recorded. docs/explanation/design.md describes the model.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE user_memories (
    id              uuid PRIMARY KEY,
    user_id         text NOT NULL,
    heroine_id      text NOT NULL,
    speaker         text NOT NULL CHECK (speaker IN ('user', 'heroine')),
    subject         text NOT NULL CHECK (subject IN ('user', 'heroine', 'world')),
    subject_id      text NOT NULL,
    content_type    text NOT NULL CHECK (content_type IN
                        ('fact', 'preference', 'trait', 'event', 'opinion', 'personal', 'relationship')),
    content         text NOT NULL,
    -- The content normalised (NFKC, case, spacing, punctuation): exact repeats compare equal.
    content_key     text NOT NULL,
    importance      smallint NOT NULL CHECK (importance BETWEEN 1 AND 10),
    tier            text NOT NULL CHECK (tier IN ('gist', 'knowledge', 'source')),
    slot            text,
    metadata        jsonb NOT NULL DEFAULT '{}'::jsonb,
    -- No fixed size: the size follows the configured model; start-up refuses a mix of models.
    embedding       vector NOT NULL,
    embedding_model text NOT NULL,
    -- BM25 terms (morphemes), duplicates kept; computed once at write time.
    terms           text[] NOT NULL DEFAULT '{}',
    valid_at        timestamptz NOT NULL,
    invalid_at      timestamptz,
    close_reason    text CHECK (close_reason IN ('superseded', 'invalidated', 'retired')),
    superseded_by   uuid REFERENCES user_memories (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CHECK (invalid_at IS NULL OR invalid_at >= valid_at),
    CHECK ((invalid_at IS NULL) = (close_reason IS NULL))
);

-- Every read names the scope; a scope holds hundreds to a few thousand rows, read exactly.
CREATE INDEX user_memories_scope ON user_memories (user_id, heroine_id, valid_at DESC, id);
-- Supersession looks up the valid row of a slot.
CREATE INDEX user_memories_slot ON user_memories (user_id, heroine_id, subject_id, slot)
    WHERE slot IS NOT NULL;
-- Duplicate detection compares the normalised text of valid rows about the same subject.
CREATE INDEX user_memories_content_key ON user_memories (user_id, heroine_id, subject_id, content_key)
    WHERE invalid_at IS NULL;
CREATE INDEX user_memories_superseded_by ON user_memories (superseded_by) WHERE superseded_by IS NOT NULL;

-- Which embedding model the stored vectors come from: start-up refuses a different model until
-- `npc-memory reembed` has rewritten the vectors.
CREATE TABLE service_settings (
    key        text PRIMARY KEY,
    value      text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
