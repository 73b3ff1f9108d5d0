# stashd on Debian 13 (Node.js 20 from Debian) with Debian's redis-server for the managed databases and queue.
# Build: scripts/container-build.sh (or `docker build -t stashd .`). Data: the /data volume.
FROM debian:trixie-slim AS build
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends nodejs npm ca-certificates \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
RUN npm install --no-audit --no-fund
COPY src ./src
COPY bin ./bin
RUN npx tsc -p tsconfig.build.json && npm prune --omit=dev

FROM debian:trixie-slim
RUN apt-get update -qq \
  && apt-get install -y -qq --no-install-recommends nodejs redis-server ca-certificates curl \
  && rm -rf /var/lib/apt/lists/* \
  && useradd --system --home-dir /data --shell /usr/sbin/nologin stashd \
  && mkdir -p /data && chown stashd:stashd /data && chmod 700 /data
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY --from=build /src/bin ./bin
USER stashd
ENV STASHD_DATA_DIR=/data \
    STASHD_HOST=0.0.0.0 \
    STASHD_ADMIN_HOST=0.0.0.0 \
    STASHD_LOG_FORMAT=json
VOLUME ["/data"]
EXPOSE 8079 8080 8081
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
  CMD curl -fsS http://127.0.0.1:8081/healthz || exit 1
STOPSIGNAL SIGTERM
CMD ["node", "bin/stashd", "start"]
