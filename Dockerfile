# stashd with Debian's Node.js 20 and Debian's redis-server (the managed databases and the queue
# store run as child processes inside the container; their data lives in the /data volume).
#
# Debian 13 (trixie) is the base because it is the first Debian release whose nodejs package is 20
# (stashd needs Node >= 20; bookworm ships 18). BASE is a build argument so the same file builds
# from a locally made base where no image registry is reachable: scripts/container-build.sh makes
# one with debootstrap and passes --build-arg BASE=localhost/stashd-base:trixie.
#
#   docker build -t stashd .          (or: podman build --format docker -t stashd .)
#   docker run -p 127.0.0.1:8079:8079 -p 127.0.0.1:8080:8080 -v stashd-data:/data stashd
#   docker exec <container> stashd credentials
ARG BASE=debian:trixie-slim

FROM ${BASE} AS build
# For the RUN steps only (an ARG, not an ENV: the image does not keep it).
ARG DEBIAN_FRONTEND=noninteractive
# g++, make and python3: node-gyp builds hnswlib-node's native addon (VECTOR.QUERY's graph) at
# `npm ci`; the runtime stage takes only the built addon.
RUN apt-get update \
  && apt-get install -y --no-install-recommends nodejs npm ca-certificates g++ make python3 \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Behind a TLS-intercepting proxy, the proxy's CA for npm (a file mounted into the build; see
# scripts/container-build.sh). Only the build stage sees it; the image does not keep it.
ARG NODE_EXTRA_CA_CERTS
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/copy-lua.mjs scripts/build-console.mjs ./scripts/
COPY console ./console
COPY src ./src
COPY bin ./bin
# The full build: tsc, the .lua scripts copied next to the compiled modules, the web console
# bundled into dist/console.
RUN npm run build && npm prune --omit=dev

FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
  && apt-get install -y --no-install-recommends nodejs redis-server ca-certificates \
  && rm -rf /var/lib/apt/lists/* \
  && groupadd --system --gid 10001 stashd \
  && useradd --system --uid 10001 --gid stashd --home-dir /data --shell /usr/sbin/nologin stashd \
  && install -d -o stashd -g stashd -m 700 /data
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY --from=build /src/bin ./bin
RUN ln -s /app/bin/stashd /usr/local/bin/stashd
# Numeric, so orchestrators can verify runAsNonRoot.
USER 10001:10001
ENV STASHD_DATA_DIR=/data \
    STASHD_HOST=0.0.0.0 \
    STASHD_ADMIN_HOST=0.0.0.0 \
    STASHD_LOG_FORMAT=json
VOLUME ["/data"]
# 8079 KV (Upstash Redis REST), 8080 queue (QStash), 8081 admin (/healthz, /readyz, /metrics; no
# token: publish it to the host's loopback or the cluster only).
EXPOSE 8079 8080 8081
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.STASHD_ADMIN_PORT || 8081}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# stashd stops gracefully on SIGTERM (in-flight requests finish, redis-servers flush their AOF).
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "/app/bin/stashd"]
CMD ["start"]
