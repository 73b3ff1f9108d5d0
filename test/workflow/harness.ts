import http from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "@upstash/workflow";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { FAST_QUEUE } from "../queue/setup.js";
import type { StartOptions } from "../../src/index.js";
import { queueKeys } from "../../src/queue/store/keys.js";
import { makePartitions, type Partition } from "../../src/queue/store/partitions.js";
import type { QueueRedis } from "../../src/queue/store/redis.js";

/** A web-standard handler, as `serve()` from "@upstash/workflow" returns it. */
export type WebHandler = (request: Request) => Promise<Response>;

/** One recorded request to an app route. */
export interface Hit {
  path: string;
  headers: Headers;
  body: string;
  /** The answer's status; 0 while the handler still runs. */
  status: number;
  /** When the request arrived (ms). */
  at: number;
}

/**
 * A local node:http server hosting web-standard handlers by path (the way a user runs `serve`
 * behind node:http). Every request and the status it got are recorded in `hits`.
 */
export interface App {
  url: string;
  hits: Hit[];
  /** The hits of one path, in arrival order. */
  hitsOf(path: string): Hit[];
  route(path: string, handler: WebHandler): string;
  close(): Promise<void>;
}

export async function startApp(): Promise<App> {
  const routes = new Map<string, WebHandler>();
  const hits: Hit[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void answer(req, Buffer.concat(chunks), res);
    });
  });
  async function answer(req: http.IncomingMessage, body: Buffer, res: http.ServerResponse) {
    const at = Date.now();
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      for (const v of Array.isArray(value) ? value : [value ?? ""]) headers.append(name, v);
    }
    const hit: Hit = { path, headers, body: body.toString("utf8"), status: 0, at };
    hits.push(hit);
    const handler = routes.get(path);
    const request = new Request(`${url}${req.url ?? "/"}`, {
      method: req.method ?? "GET",
      headers,
      ...(req.method === "GET" || req.method === "HEAD" ? {} : { body }),
    });
    const response = handler ? await handler(request) : new Response("no route", { status: 404 });
    const text = Buffer.from(await response.arrayBuffer());
    hit.status = response.status;
    res.writeHead(response.status, Object.fromEntries(response.headers.entries())).end(text);
  }
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    hits,
    hitsOf: (path) => hits.filter((h) => h.path === path),
    route: (path, handler) => {
      routes.set(path, handler);
      return `${url}${path}`;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface WorkflowTestEnv {
  redis: TestRedis;
  stashd: TestStashd;
  /** `@upstash/workflow`'s Client pointed at stashd. */
  client: Client;
  /** What a workflow app needs in its environment (QSTASH_URL, token, signing keys). */
  env: Record<string, string>;
  app: App;
  /** Raw fetch against the queue API with the token. */
  api(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

export async function workflowEnv(options: StartOptions = {}): Promise<WorkflowTestEnv> {
  const redis = await startRedis();
  // Workflows run on the queue alone: no KV gateway or its Redis.
  const stashd = await startStashd({
    queueRedisUrl: redis.url,
    services: ["queue"],
    ...FAST_QUEUE,
    ...options,
  });
  const app = await startApp();
  const q = stashd.queue;
  const env = {
    QSTASH_URL: q.url,
    QSTASH_TOKEN: q.token,
    QSTASH_CURRENT_SIGNING_KEY: q.currentSigningKey,
    QSTASH_NEXT_SIGNING_KEY: q.nextSigningKey,
  };
  return {
    redis,
    stashd,
    env,
    app,
    client: new Client({ baseUrl: q.url, token: q.token }),
    api: (path, init = {}) => {
      const headers = new Headers(init.headers);
      headers.set("authorization", `Bearer ${q.token}`);
      return fetch(`${q.url}${path}`, { ...init, headers });
    },
    close: async () => {
      await app.close();
      await stashd.stop();
      await redis.stop();
    },
  };
}

/**
 * The partition of the queue at `redis` holding workflow run `runId`'s hash (partition 0 when
 * none does), with its keys on `redis`: where a test finds a run's keys (docs/workflow.md §3).
 */
export async function runPartitionAt(redis: QueueRedis, runId: string): Promise<Partition> {
  const stored = await redis.exec(["GET", queueKeys.partitionCount]);
  const count = stored.kind === "bulk" ? Number(stored.value.toString()) : 1;
  const parts = makePartitions(count, () => redis);
  for (const p of parts.all) {
    const held = await redis.exec(["EXISTS", p.keys.workflowRun(runId)]);
    if (held.kind === "int" && held.value === "1") return p;
  }
  return parts.main;
}
