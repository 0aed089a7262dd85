# Threadline worker and gateway image. One image, two entry points:
#   worker (default):  node --import tsx worker/main.ts
#   gateway:           node --import tsx gateway/main.ts
# Point it at a Temporal cluster with TEMPORAL_ADDRESS (see docker-compose.yml); it never starts a dev server then.
FROM node:20-bookworm-slim

ENV NODE_ENV=production
# glibc malloc with 2 arenas and an eager trim: a worker's RSS settles lower after its workflow cache churns (idle
# threads evicted cost nothing past that plateau either way; measured in docs/limits.md, worker memory).
ENV MALLOC_ARENA_MAX=2 MALLOC_TRIM_THRESHOLD_=131072
WORKDIR /app

# Dependencies first so that source edits reuse this layer. tsx is a runtime dependency: TypeScript runs as is.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY . .

USER node
# `node --import tsx` rather than `npx tsx`: one process that receives SIGTERM itself, so the worker drains in-flight
# tasks on `docker stop` (npx runs tsx through `sh -c`, which does not forward the signal).
CMD ["node", "--import", "tsx", "worker/main.ts"]
