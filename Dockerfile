# The agentmbx relay: Node 24, non-root, its store on a volume at /data.
#   docker build -t agentmbx-relay .
#   docker run -d -p 7374:7374 -v agentmbx-relay:/data -e MBX_RELAY_KEY agentmbx-relay
# MBX_RELAY_KEY (from `agentmbx relay keygen`) comes from your secret store at run time; it is
# never written into the image. See docs/deploy.md.
FROM node:24-bookworm-slim

ENV NODE_ENV=production
WORKDIR /app

# The image already has Node 24, so the pinned `node` package's download step is skipped
# (--ignore-scripts); no other dependency has an install script.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

COPY bin ./bin
COPY src ./src

RUN mkdir -p /data && chown node:node /data
USER node

# A young generation of 8 MiB semispaces (a 500-item pull page and its rows die young there instead
# of being copied out: about 40% less CPU per item pulled) and a bounded old one keep the relay
# under 200 MB with 100,000 items queued (about 188 MB at peak: docs/benchmark.md); 192 MB of old space still holds
# several 8 MiB pull pages at once. MALLOC_ARENA_MAX=2: glibc otherwise gives each thread that
# allocates (SQLite's caller, the hop-verify worker, libuv's pool, V8's GC helpers) its own malloc
# arena, and their half-empty pages were about 14 MB of the relay's peak (bench, same run A/B).
ENV MBX_RELAY_DIR=/data \
    PORT=7374 \
    MALLOC_ARENA_MAX=2 \
    NODE_OPTIONS="--max-semi-space-size=8 --max-old-space-size=192" \
    NODE_COMPILE_CACHE=/home/node/.cache/agentmbx/node-compile-cache

# Node's compile cache, written into the image: the relay is started once (on a throwaway store,
# removed with its key) and stopped when it serves, so that every relay process of every container
# starts from compiled code instead of running the TypeScript stripper (about 15 MB more in each
# process, and a slower start: docs/relay-operator.md "Memory"). Same Node, same files, same
# NODE_OPTIONS as at run time, so the cache is used; owned by `node`, which also adds to it.
RUN set -e; store="$(mktemp -d)"; \
    bin/agentmbx relay serve --store-dir "$store/store" --port 0 --bind 127.0.0.1 --workers 1 >"$store/serve.log" 2>&1 & relay=$!; \
    waited=0; \
    until grep -qs 'agentmbx relay listening' "$store/serve.log"; do \
      if ! kill -0 "$relay" 2>/dev/null || [ "$waited" -ge 600 ]; then cat "$store/serve.log"; exit 1; fi; \
      sleep 0.1; waited=$((waited + 1)); \
    done; \
    kill -TERM "$relay"; wait "$relay"; rm -rf "$store"; \
    test -n "$(ls -A "$NODE_COMPILE_CACHE")"
VOLUME ["/data"]
EXPOSE 7374

# /healthz is 200 only when the store commits a write and the heartbeat is fresh.
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 7374) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# SIGTERM stops the relay cleanly (in-flight requests finish, the store closes).
STOPSIGNAL SIGTERM
ENTRYPOINT ["bin/agentmbx", "relay", "serve", "--bind", "0.0.0.0"]
# Behind a TLS-terminating proxy that appends X-Forwarded-For (see docs/deploy.md):
CMD ["--trust-proxy", "xff"]
