# syntax=docker/dockerfile:1
# Multi-stage: the build stage has the compilers better-sqlite3 needs (it builds from source); the runtime stage
# has only Node, the built service and its production dependencies, and runs as the unprivileged `node` user.

FROM node:20-bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# Dependencies get their own layer, before the source: a change to src/ then reuses the compiled better-sqlite3
# instead of compiling it again (in one `npm ci` with the source, that took 4 of a 5-minute build on 2 cores; a change
# to src/ alone now rebuilds in under a minute).
# --ignore-scripts because `prepare` (the TypeScript build) needs src/, not copied yet; the one production
# dependency with an install script, better-sqlite3, is built explicitly (esbuild's, the other, serves tests only).
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts && npm rebuild better-sqlite3
COPY tsconfig.json ./
COPY src ./src
# The console's front end (console/) is bundled by the same build, with the typed API client it uses.
COPY console ./console
COPY clients ./clients
# Pruning keeps the compiled addon; its sources and object files (25 MB) are not needed at run time.
RUN npm run build \
 && npm prune --omit=dev \
 && rm -rf node_modules/better-sqlite3/deps node_modules/better-sqlite3/src \
      node_modules/better-sqlite3/build/Release/obj node_modules/better-sqlite3/build/Release/obj.target \
      node_modules/better-sqlite3/build/Release/.deps node_modules/better-sqlite3/build/deps

FROM node:20-bookworm-slim
# Uploaded images beside the database, on the volume. Two malloc arenas: libvips' threads (image uploads) would
# otherwise each keep memory they freed.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATABASE_URL=sqlite:/data/listings.db \
    IMAGE_STORE_URL=file:/data/images \
    MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The default SQLite database lives on a volume the unprivileged user owns; PostgreSQL deployments ignore it.
RUN mkdir /data && chown node:node /data
VOLUME /data
USER node
EXPOSE 3000
# Liveness only: /readyz (database reachable) is for the load balancer, so a database outage does not make the
# orchestrator restart every healthy instance.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Node is PID 1 and handles SIGTERM itself: it drains in-flight requests and exits 0 within 10 s (docs/operations.md, "Shutdown and drain").
CMD ["node", "dist/cli/main.js", "serve"]
