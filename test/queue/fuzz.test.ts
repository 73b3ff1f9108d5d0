import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawRequest, runFuzz } from "../harness/fuzz.js";
import { pick, seeded } from "../harness/random.js";
import { eventually } from "../harness/eventually.js";
import { listenLocal } from "./receiver.js";
import { queueEnv, received, type QueueTestEnv } from "./setup.js";

/**
 * Reliability scenario 4 for the queue API (docs/reliability.md): seeded random paths under /v2/,
 * methods, headers (odd sizes, encodings, duplicates), bodies (invalid JSON, deep nesting, huge
 * arrays, invalid UTF-8, oversize) and tokens. Bad input must never get a 5xx and the server must
 * keep serving. Deliveries go to closed loopback ports, and to a dead receiver (accepts, never
 * answers) while random cancels arrive during delivery; afterwards a cancel frees every slot and
 * a healthy destination is delivered promptly.
 */
const SEED = 20261122;
const REQUESTS = 3000;
const MAX_BODY = 256 * 1024;
/** Stands for the dead receiver's URL in generated paths and bodies. */
const DEAD = "http://dead.invalid";
let env: QueueTestEnv;
let dead: { url: string; close(): Promise<void> };
let lastRequest = "";

beforeAll(async () => {
  env = await queueEnv({ queueMaxMessageBytes: MAX_BODY, queueMaxRetries: 2 });
  dead = await listenLocal(http.createServer(() => undefined));
});
afterAll(async () => {
  await dead?.close();
  await env?.close();
});

const bytes = (rand: () => number, n: number): Buffer =>
  Buffer.from(Array.from({ length: n }, () => Math.floor(rand() * 256)));

function bodyFor(rand: () => number): Buffer {
  switch (Math.floor(rand() * 11)) {
    case 0:
      return bytes(rand, Math.floor(rand() * 300));
    case 1:
      return Buffer.from('{"a":'.repeat(3000) + "1" + "}".repeat(3000));
    case 2:
      return Buffer.from(JSON.stringify({ endpoints: Array.from({ length: 20000 }, (_, i) => i) }));
    case 3:
      return Buffer.concat([Buffer.from('{"destination":"'), bytes(rand, 40), Buffer.from('"}')]);
    case 4:
      return Buffer.from(
        JSON.stringify({
          destination: pick(rand, DESTINATIONS),
          cron: pick(rand, ["* * * * *", "", "61 * * * *", "CRON_TZ=Nowhere/X * * * * *", "@x"]),
          endpoints: [{ url: pick(rand, DESTINATIONS) }, { name: 5 }, null],
          messageIds: [1, null, "x".repeat(300)],
          dlqIds: "nope",
          queueName: pick(rand, ["q1", "", "x".repeat(300), 7]),
          parallelism: pick(rand, [1, 0, -1, 1e9, 1.5, "2", null]),
        }),
      );
    case 5:
      return Buffer.alloc(MAX_BODY + 1 + Math.floor(rand() * 1024), 0x62);
    case 6:
      return Buffer.from("[" + "[".repeat(5000) + "]".repeat(5000) + "]");
    case 7:
      return Buffer.from([0xc3, 0x28, 0xff, 0xfe, 0xed, 0xa0, 0x80]);
    case 8:
      return Buffer.from('{"a":1,"a":2,"__proto__":{"polluted":true}}');
    case 9:
      return Buffer.from(JSON.stringify(batchItems(rand)));
    default:
      return Buffer.alloc(0);
  }
}

/** A /v2/batch body: items of every shape the three SDKs send, and some no SDK sends. */
function batchItems(rand: () => number): unknown[] {
  return Array.from({ length: 1 + Math.floor(rand() * 5) }, () =>
    pick(rand, [
      { destination: pick(rand, DESTINATIONS), body: "b", queue: pick(rand, ["q1", "", null]) },
      { destination: pick(rand, DESTINATIONS), headers: { "upstash-retries": "x" } },
      { destination: 5, headers: [1, 2] },
      { destination: pick(rand, DESTINATIONS), headers: { "upstash-delay": ["1s", "2s"] } },
      null,
      "item",
      [],
      { queue: "a/b", destination: "http://127.0.0.1:1/" },
    ]),
  );
}

const DESTINATIONS = [
  "http://127.0.0.1:1/x",
  `${DEAD}/hang`,
  `${DEAD}/hang?b=2`,
  "https://127.0.0.1:1/y?a=1&a=2",
  "http%3A%2F%2F127.0.0.1%3A1%2Fenc",
  "ftp://127.0.0.1/x",
  "http://[::1",
  "http://%zz/",
  "javascript:alert(1)",
  "g-" + "a".repeat(300),
  "group.one",
  "http://127.0.0.1:1/" + "p".repeat(5000),
  "",
];

function pathFor(rand: () => number): string {
  const dest = pick(rand, DESTINATIONS);
  return pick(rand, [
    `/v2/publish/${dest}`,
    `/v2/publish/${dest}?upstash-retries=1&upstash-delay=${pick(rand, ["1s", "x", "-1s", "9".repeat(30)])}`,
    `/v2/publish/${dest}?qstash_token=&qstash_token=x`,
    "/v2/publish/",
    "/v2/messages/msg_%FF%FE",
    "/v2/messages/" + "m".repeat(2000),
    "/v2/messages?messageIds=a,b",
    "/v2/messages",
    `/v2/messages?count=${pick(rand, ["1", "0", "x", "3"])}`,
    `/v2/messages?url=${DEAD}/hang`,
    "/v2/globalParallelism",
    "/v2/dlq?cursor=x&count=-1",
    "/v2/dlq?count=99999999999999999999",
    "/v2/dlq/retry",
    "/v2/dlq/%",
    `/v2/topics/${pick(rand, ["g1", "%00", "a%20b", "x".repeat(500)])}/endpoints`,
    "/v2/topics",
    `/v2/schedules/${dest}`,
    "/v2/schedules/scd_nope/pause",
    "/v2/logs?state=NOPE&fromDate=x&toDate=-1&cursor=1-1",
    "/v2/events?count=0",
    "/v2/keys/rotate",
    "/v2/queues/q1",
    "/v2/queues",
    `/v2/queues/${pick(rand, ["q1", "%FF", "q".repeat(300)])}/${pick(rand, ["pause", "resume"])}`,
    `/v2/enqueue/${pick(rand, ["q1", "q2", "a%2Fb", "", "q".repeat(300)])}/${dest}`,
    `/v2/enqueue/q1/${dest}?upstash-retries=0`,
    "/v2/batch",
    "/v2/batch",
    "/v2//////",
    "/v3/publish/x",
    "/%%%/x",
    "/?" + "a=b&".repeat(300),
  ]);
}

function headersFor(rand: () => number, token: string): http.OutgoingHttpHeaders {
  const num = (): string =>
    pick(rand, ["0", "1", "-1", "1.5", "abc", "9".repeat(40), "", " 2 ", "1e3"]);
  return {
    authorization: pick(rand, [
      `Bearer ${token}`,
      `Bearer ${token}`,
      `Bearer ${token}`,
      `Bearer ${token}`,
      `Bearer ${token}`,
      `Bearer ${token}`,
      "Bearer",
      `bearer  ${token}x`,
      "Basic Zm9v",
      "Bearer \u00ff\u00fe",
      `Bearer ${"t".repeat(8000)}`,
    ]),
    "content-type": pick(rand, ["application/json", "text/plain", "", "a".repeat(3000)]),
    "upstash-retries": num(),
    "upstash-delay": pick(rand, ["10s", "1h", "-1s", "1x", num()]),
    "upstash-not-before": num(),
    "upstash-timeout": pick(rand, ["1s", "0", "x", num()]),
    "upstash-method": pick(rand, ["POST", "GET", "TRACE", "", "P O S T"]),
    "upstash-callback": pick(rand, DESTINATIONS),
    "upstash-deduplication-id": pick(rand, ["d1", "", "\u00e9".repeat(100)]),
    "upstash-content-based-deduplication": pick(rand, ["true", "false", "yes"]),
    "upstash-forward-x-a": pick(rand, [["a", "b"], "v".repeat(4000), ""]),
    "upstash-cron": pick(rand, ["* * * * *", "x", "* * * * * * *"]),
    "upstash-encoding": pick(rand, ["base64", "", "gzip"]),
  };
}

function send(port: number, rand: () => number): Promise<{ status: number; body: string }> {
  const headers = headersFor(rand, env.stashd.queue.token);
  const method = pick(rand, ["POST", "POST", "GET", "PUT", "HEAD", "DELETE", "PATCH", "OPTIONS"]);
  const path = pathFor(rand).replaceAll(DEAD, dead.url);
  const body = Buffer.from(bodyFor(rand).toString("latin1").replaceAll(DEAD, dead.url), "latin1");
  lastRequest = `${method} ${path.slice(0, 60)} ${body.length} ${body.subarray(0, 40).toString("latin1")}`;
  return rawRequest(port, method, path, headers, body, true);
}

describe("hostile input against the queue API", () => {
  it(`answers ${REQUESTS} seeded random requests without a 5xx and keeps serving`, async () => {
    const rand = seeded(SEED);
    const port = env.stashd.queue.port;
    // 150 attempts hang on the dead receiver (its share is 100) while the random requests,
    // cancels among them, arrive.
    const items = Array.from({ length: 150 }, () => ({ destination: `${dead.url}/hang` }));
    await env.api("/v2/batch", { method: "POST", body: JSON.stringify(items) });
    const run = await runFuzz(
      "queue",
      REQUESTS,
      () => send(port, rand),
      () => lastRequest,
    );
    expect([...run.statuses.keys()].every((s) => s < 500)).toBe(true);
    const alive = await env.api("/v2/keys");
    expect(alive.status).toBe(200);
    // Whatever hangs on the dead receiver is cancelled and frees its slots; a healthy
    // destination is still delivered at once.
    await env.api("/v2/messages", { method: "DELETE" });
    await eventually(async () => {
      const res = await env.api("/v2/globalParallelism");
      expect(((await res.json()) as { parallelismCount: number }).parallelismCount).toBe(0);
    });
    const rx = await env.receiver();
    await env.client.publish({ url: `${rx.url}/after`, body: "a" });
    await received(rx, 0, 3_000);
  }, 60_000); // thousands of requests: seconds idle, near 30 s once at load 20
});
