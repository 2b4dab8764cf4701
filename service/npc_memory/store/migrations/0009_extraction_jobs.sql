-- Extraction jobs: a dialogue waiting to be turned into memories by the chat model, kept until done.
-- The queue is taken with FOR UPDATE SKIP LOCKED (store/jobs.py). A job in state 'running' holds a lease
-- until next_attempt_at; a worker killed mid-job leaves it there, and the job is taken again after the lease.
-- One job per (scope, dialogue_id): asking twice for the same dialogue returns the first job.
CREATE TABLE extraction_jobs (
    user_id         text NOT NULL,
    job_id          uuid NOT NULL,
    heroine_id      text NOT NULL,
    dialogue_id     text NOT NULL,
    -- The turns as [{"speaker", "text", "game_time"}]; needed to run the job again after a restart.
    dialogue        jsonb NOT NULL,
    state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'running', 'done', 'failed')),
    attempts        int NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text NOT NULL DEFAULT '',
    -- When done: {"memories": [{"fact_index", "content", "memory_id", "outcome", "superseded_ids"}],
    --             "rejected": [{"fact_index", "reasons", "raw"}]}.
    result          jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, job_id),
    UNIQUE (user_id, heroine_id, dialogue_id)
);

-- The worker looks for the earliest due job that is not finished.
CREATE INDEX extraction_jobs_due ON extraction_jobs (next_attempt_at) WHERE state IN ('pending', 'running');
