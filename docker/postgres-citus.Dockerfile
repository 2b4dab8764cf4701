# PostgreSQL 17 with Citus and pgvector, for a Citus cluster spread by player (docs/guide/scaling.md):
#   docker build -f docker/postgres-citus.Dockerfile -t npc-memory-postgres-citus docker
#
# This adds pgvector to the Citus project's own image, which is the official postgres:17 image plus Citus (it
# preloads citus and creates the extension in POSTGRES_DB), so the PostgreSQL project's apt repository (PGDG), which
# packages pgvector, is configured in it already. Every node of the cluster runs this image: pgvector must be on the
# workers too, where the vectors are. Base pinned by tag (no digest at hand, see docs/guide/production.md); pgvector pinned
# to its 0.8 series: a build fails, rather than drifts, once PGDG moves on.
FROM citusdata/citus:13.0.3

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN apt-get update \
    && apt-get install -y --no-install-recommends "postgresql-17-pgvector=0.8.*" \
    && rm -rf /var/lib/apt/lists/*
