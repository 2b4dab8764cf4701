# PostgreSQL 17 with both PGroonga and pgvector, for the PGroonga keyword backend:
#   docker build -f docker/postgres-pgroonga.Dockerfile -t npc-memory-postgres-pgroonga docker
#
# No published image carries both at PostgreSQL 17, so this adds pgvector to the PGroonga project's own image.
# That image is the official postgres:17-bookworm plus PGroonga, so the PostgreSQL project's apt repository
# (PGDG), which packages pgvector, is configured in it already. Base pinned by tag (no digest at hand, see
# docs/guide/production.md); pgvector pinned to its 0.8 series: a build fails, rather than drifts, once PGDG moves on.
FROM groonga/pgroonga:4.0.8-debian-17

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN apt-get update \
    && apt-get install -y --no-install-recommends "postgresql-17-pgvector=0.8.*" \
    && rm -rf /var/lib/apt/lists/*
# The postgres entrypoint starts the server as the unprivileged postgres user; both extensions are created by
# the service at start (CREATE EXTENSION vector / pgroonga).
