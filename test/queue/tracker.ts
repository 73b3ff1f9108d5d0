import http from "node:http";
import { listenLocal, verify, type SigningKeysSource } from "./receiver.js";

/**
 * A local receiver on port 0 for queue-order tests: it verifies each request's signature with the
 * SDK's `Receiver`, records `start <path> <body>` / `end ...` events in one shared timeline (so
 * several trackers can be compared), counts requests in flight and the most ever seen at once,
 * and answers with the status `statusOf` picks (default 200) after `delayMs`.
 */
export interface Tracker {
  url: string;
  inflight: number;
  maxInflight: number;
  delayMs: number;
  /** Status for a request, given its body and `Upstash-Retried` value. */
  statusOf: (body: string, retried: number) => number;
  /** Bodies of the requests answered, in answer order, with the status given. */
  answered: { body: string; retried: number; status: number }[];
  badSignatures: number;
  close(): Promise<void>;
}

export async function startTracker(
  keys: SigningKeysSource,
  timeline: string[] = [],
  name = "rx",
): Promise<Tracker> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => void answer(req, res, Buffer.concat(chunks).toString("utf8")));
  });
  const state: Omit<Tracker, "url" | "close"> = {
    inflight: 0,
    maxInflight: 0,
    delayMs: 0,
    statusOf: () => 200,
    answered: [],
    badSignatures: 0,
  };
  async function answer(req: http.IncomingMessage, res: http.ServerResponse, body: string) {
    state.inflight++;
    state.maxInflight = Math.max(state.maxInflight, state.inflight);
    timeline.push(`start ${name} ${body}`);
    const url = `${listening.url}${req.url ?? "/"}`;
    if ((await verify(keys, req, body, url)) !== undefined) state.badSignatures++;
    if (state.delayMs > 0) await new Promise((r) => setTimeout(r, state.delayMs));
    const retried = Number(req.headers["upstash-retried"] ?? 0);
    const status = state.statusOf(body, retried);
    state.answered.push({ body, retried, status });
    timeline.push(`end ${name} ${body}`);
    state.inflight--;
    res.writeHead(status).end("ok");
  }
  const listening = await listenLocal(server);
  return Object.assign(state, listening);
}
