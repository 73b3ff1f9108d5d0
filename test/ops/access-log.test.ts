import type { IncomingMessage, ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { instrument, labelRequest } from "../../src/shared/instrument.js";
import { listen, type RunningHttpServer } from "../../src/shared/http/server.js";
import { createLogger } from "../../src/shared/log.js";
import { eventually } from "../harness/eventually.js";

/**
 * Request log lines (issue 29): one line per request only with STASHD_ACCESS_LOG; failures (5xx)
 * and requests slower than STASHD_SLOW_REQUEST_MS are logged either way. Checked on a real
 * listener with the real logger writing JSON lines.
 */
let server: RunningHttpServer | undefined;
afterEach(async () => {
  await server?.close(0);
  server = undefined;
});

/** A listener answering `/ok` 200, `/fail` 503, `/slow` 200 after 60 ms; the lines it logs. */
async function serve(accessLog: boolean, slowMs: number): Promise<() => Record<string, unknown>[]> {
  const lines: string[] = [];
  const logger = createLogger("info", "test", { format: "json", write: (l) => lines.push(l) });
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const path = req.url ?? "/";
    labelRequest(req, path.slice(1));
    const status = path === "/fail" ? 503 : 200;
    const delay = path === "/slow" ? 60 : 0;
    setTimeout(() => res.writeHead(status).end("x"), delay);
  };
  server = await listen(instrument(handler, { service: "t", logger, accessLog, slowMs }), {
    host: "127.0.0.1",
    port: 0,
    requestTimeoutMs: 5_000,
  });
  return () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
}

async function get(path: string): Promise<void> {
  await (await fetch(`${server?.url ?? ""}${path}`)).text();
}

/** `msg route` of each line once `count` were logged (a line follows its answer). */
async function linesAfterThreeRequests(
  logged: () => Record<string, unknown>[],
  count: number,
): Promise<string[]> {
  for (const p of ["/ok", "/fail", "/slow"]) await get(p);
  return eventually(() => {
    const lines = logged().map((e) => `${String(e.msg)} ${String(e.route)}`);
    if (lines.length < count) throw new Error(`only ${lines.length} lines yet`);
    return lines;
  });
}

describe("request log lines", () => {
  it("by default: no line for a fast success, a line for a 5xx and for a slow request", async () => {
    const logged = await serve(false, 50);
    const lines = await linesAfterThreeRequests(logged, 2);
    expect(lines.sort()).toEqual(["request failed fail", "slow request slow"]);
  });

  it("with the access log: one line per request", async () => {
    const logged = await serve(true, 0);
    const lines = await linesAfterThreeRequests(logged, 3);
    expect(lines.sort()).toEqual(["request failed fail", "request ok", "request slow"]);
  });
});
