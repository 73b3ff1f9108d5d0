import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { Gauge, Registry } from "prom-client";
import { messageOf } from "../shared/errors.js";
import type { ConnectionCap } from "../shared/http/connections.js";
import { sendJson } from "../shared/http/respond.js";
import { listen, type RunningHttpServer } from "../shared/http/server.js";
import type { Logger } from "../shared/log.js";
import { registry as processRegistry } from "../shared/metrics.js";
import type { Readiness } from "./readiness.js";

/**
 * /metrics of a server made of several processes (src/cli/worker.ts): given this process's
 * listener-only registries (readiness and scrape-time queue gauges, which must be counted once),
 * answers the Prometheus text of every process's metrics added up.
 */
export type MetricsScrape = (listenerOnly: Registry[]) => Promise<string>;

export interface AdminOptions {
  host: string;
  port: number;
  requestTimeoutMs: number;
  /** Runs the readiness checks (see readiness.ts). */
  readiness: () => Promise<Readiness>;
  /** Per-instance registries merged into /metrics (scrape-time queue gauges). */
  registries: Registry[];
  /** Set in a worker of several; otherwise /metrics is this process's own. */
  scrape?: MetricsScrape | undefined;
  logger: Logger;
  /** The process's bound on open connections, shared with the other listeners. */
  connections?: ConnectionCap | undefined;
}

export interface AdminListener {
  url: string;
  port: number;
  /**
   * Serves `handler` for every path under `prefix` (e.g. a web console at `/console`). The
   * handler does its own authentication: nothing on this listener asks for a token.
   */
  mount(prefix: string, handler: RequestListener): void;
  /** From now on /readyz answers 503 "stopping" (load balancers stop sending traffic). */
  markStopping(): void;
  close(graceMs: number): Promise<void>;
}

/**
 * The admin listener: `/healthz` (the process is up), `/readyz` (every Redis reachable, managed
 * servers running; 503 with the reasons otherwise), `/metrics` (Prometheus text). Unauthenticated,
 * so it listens on loopback unless STASHD_ADMIN_HOST says otherwise (see docs/operations.md).
 * Probe and scrape requests are not logged one by one (they come every few seconds).
 */
export async function startAdmin(opts: AdminOptions): Promise<AdminListener> {
  const mounts: [string, RequestListener][] = [];
  let stopping = false;
  const readyGauge = new Gauge({
    name: "stashd_ready",
    help: "1 when /readyz would answer 200; per check: 1 ok, 0 failing (label check).",
    labelNames: ["check"],
    registers: [],
    async collect() {
      this.reset();
      if (stopping) return this.set({ check: "all" }, 0);
      const r = await opts.readiness();
      this.set({ check: "all" }, r.ready ? 1 : 0);
      for (const [check, state] of Object.entries(r.checks))
        this.set({ check }, state === "ok" ? 1 : 0);
    },
  });
  const own = new Registry();
  own.registerMetric(readyGauge);
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    route(req, res).catch((err: unknown) => {
      opts.logger.warn("admin request failed", { err: messageOf(err) });
      sendJson(res, 500, JSON.stringify({ error: "internal error" }));
    });
  };
  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const mounted = mounts.find(([p]) => path === p || path.startsWith(`${p}/`));
    if (mounted) return mounted[1](req, res);
    req.resume();
    if (req.method !== "GET" && req.method !== "HEAD") {
      return sendJson(res, 405, JSON.stringify({ error: "use GET" }));
    }
    if (path === "/healthz") return sendJson(res, 200, JSON.stringify({ status: "ok" }));
    // A person opening the admin address lands on the web console when one is mounted.
    const home = mounts[0]?.[0];
    if (path === "/" && home) {
      res.writeHead(302, { location: home, "content-length": 0 });
      res.end();
      return;
    }
    if (path === "/readyz" && stopping) {
      return sendJson(res, 503, JSON.stringify({ error: "stashd is stopping" }));
    }
    if (path === "/readyz") return sendReadiness(res, await opts.readiness());
    if (path === "/metrics") {
      const listenerOnly = [own, ...opts.registries];
      const text = opts.scrape
        ? await opts.scrape(listenerOnly)
        : await Registry.merge([processRegistry, ...listenerOnly]).metrics();
      res.writeHead(200, { "content-type": processRegistry.contentType });
      res.end(text);
      return;
    }
    sendJson(res, 404, JSON.stringify({ error: "not found: try /healthz, /readyz or /metrics" }));
  };
  const http: RunningHttpServer = await listen(handler, {
    host: opts.host,
    port: opts.port,
    requestTimeoutMs: opts.requestTimeoutMs,
    connections: opts.connections,
  });
  return {
    url: http.url,
    port: http.port,
    mount: (prefix, h) => mounts.push([prefix.replace(/\/+$/, ""), h]),
    markStopping: () => (stopping = true),
    close: (graceMs) => http.close(graceMs),
  };
}

function sendReadiness(res: ServerResponse, r: Readiness): void {
  if (r.ready) return sendJson(res, 200, JSON.stringify({ status: "ready", checks: r.checks }));
  const failing = Object.entries(r.checks)
    .filter(([, state]) => state !== "ok")
    .map(([check, state]) => `${check}: ${state}`);
  sendJson(
    res,
    503,
    JSON.stringify({ error: `not ready: ${failing.join("; ")}`, checks: r.checks }),
  );
}
