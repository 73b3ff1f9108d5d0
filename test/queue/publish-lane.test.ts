import { Client } from "@upstash/qstash";
import { describe, expect, it } from "vitest";
import { comparable, laneCount, onceOn, RawClient, request } from "../harness/raw-http.js";
import { useQueueLaneAndNode } from "./lane-setup.js";
import { queuePort, received, TEST_TOKEN, type QueueTestEnv } from "./setup.js";
import type { TestReceiver } from "./receiver.js";

/**
 * The queue's fast lane (src/queue/routes/lane.ts on src/shared/http/lane.ts) answers whole
 * `POST /v2/publish/...` and `POST /v2/enqueue/...` requests in front of node:http. Pinned here
 * on raw sockets: each request goes to a stashd with the lane and to one without it
 * (STASHD_QUEUE_FAST_LANE=false), each on its own Redis with the same token and signing keys, and
 * the answers must be the same bytes but for the Date and the message ids; the lane's counter
 * shows which requests it took. What the lane declines (a wrong token, a bad destination or queue
 * name, whose refusal closes the connection, a body over the message size, a workflow publish, an
 * odd header) is answered by node:http on the same connection. The
 * messages stored through the lane reach the receiver as those stored through node:http do, and
 * the official client publishes through it.
 */

const MAX_MESSAGE = 4096;
const both = useQueueLaneAndNode({ queueMaxMessageBytes: MAX_MESSAGE });
const lane = (): QueueTestEnv => both().lane;
const plain = (): QueueTestEnv => both().plain;
const rx = (): TestReceiver => both().rx;
const portOf = queuePort;
const auth = { Authorization: `Bearer ${TEST_TOKEN}` };

/** comparable() without the message ids, which differ between any two publishes. */
function same(raw: Buffer, handedOver: boolean): string {
  return comparable(raw, handedOver).replace(/msg_[A-Za-z0-9]+/g, "msg_*");
}

/** [name, path (after the receiver's URL when it starts with `/`), body, headers, taken] */
type Case = [string, (rx: string) => string, string, Record<string, string>, boolean];

const BIG = "x".repeat(MAX_MESSAGE + 1);

const CASES: Case[] = [
  ["a publish", (u) => `/v2/publish/${u}/a`, "hi", auth, true],
  ["an empty body", (u) => `/v2/publish/${u}/empty`, "", auth, true],
  [
    "a JSON publish with options",
    (u) => `/v2/publish/${u}/opts?x=1&upstash-retries=2`,
    '{"a":1}',
    {
      ...auth,
      "Content-Type": "application/json",
      "Upstash-Method": "PUT",
      "Upstash-Delay": "1d",
      "Upstash-Forward-X-Thing": "yes",
      "Upstash-Callback": "http://127.0.0.1:9/cb",
      "Upstash-Failure-Callback": "http://127.0.0.1:9/fail",
      "Upstash-Timeout": "5s",
    },
    true,
  ],
  [
    "flow control",
    (u) => `/v2/publish/${u}/flow`,
    "f",
    {
      ...auth,
      "Upstash-Flow-Control-Key": "k1",
      "Upstash-Flow-Control-Value": "rate=5,parallelism=2",
    },
    true,
  ],
  [
    "header forwarding",
    (u) => `/v2/publish/${u}/fwd`,
    "h",
    { ...auth, "Upstash-Header-Forward": "true", "X-Own": "mine", "Upstash-Delay": "1d" },
    true,
  ],
  [
    "an encoded destination",
    (u) => `/v2/publish/${encodeURIComponent(`${u}/enc`)}`,
    "e",
    auth,
    true,
  ],
  ["the token in the query", (u) => `/v2/publish/${u}/q?qstash_token=${TEST_TOKEN}`, "q", {}, true],
  ["an enqueue", (u) => `/v2/enqueue/lane-q/${u}/enq`, "q", auth, true],
  ["a bad destination", () => "/v2/publish/ftp://nowhere/x", "b", auth, false],
  ["a group that does not exist", () => "/v2/publish/no-such-group", "g", auth, true],
  ["a bad delay", (u) => `/v2/publish/${u}/d`, "d", { ...auth, "Upstash-Delay": "soon" }, true],
  ["a bad method", (u) => `/v2/publish/${u}/m`, "m", { ...auth, "Upstash-Method": "FETCH" }, true],
  ["a bad queue name", (u) => `/v2/enqueue/bad!q/${u}/x`, "q", auth, false],
  ["an empty destination", () => "/v2/publish/", "x", auth, false],
  ["no token", (u) => `/v2/publish/${u}/a`, "hi", {}, false],
  ["a wrong token", (u) => `/v2/publish/${u}/a`, "hi", { Authorization: "Bearer nope" }, false],
  ["a body over the message size", (u) => `/v2/publish/${u}/big`, BIG, auth, false],
  [
    "a workflow publish",
    (u) => `/v2/publish/${u}/wf`,
    "w",
    { ...auth, "Upstash-Workflow-RunId": "wfr_lane" },
    false,
  ],
  ["Connection: close", (u) => `/v2/publish/${u}/c`, "c", { ...auth, Connection: "close" }, false],
  [
    "a header given twice",
    (u) => `/v2/publish/${u}/t`,
    "t",
    { ...auth, "x-a": "1", "X-A": "2" },
    false,
  ],
  ["a path in capitals", (u) => `/v2/PUBLISH/${u}/cap`, "c", auth, false],
  ["a target with a quote", (u) => `/v2/publish/${u}/"q"`, "q", auth, false],
  ["a batch", () => "/v2/batch", "[]", auth, false],
];

describe("the queue's fast lane answers as node:http does", () => {
  for (const [name, path, body, headers, taken] of CASES) {
    it(`${name} (${taken ? "the lane" : "node:http"})`, async () => {
      const bytes = request(path(rx().url), body, headers);
      const answeredBefore = await laneCount("answered", "queue");
      const viaLane = await onceOn(portOf(lane()), bytes);
      const answered = (await laneCount("answered", "queue")) - answeredBefore;
      const viaNode = await onceOn(portOf(plain()), bytes);
      expect(same(viaLane, !taken)).toBe(same(viaNode, !taken));
      expect(answered).toBe(taken ? 1 : 0);
    });
  }

  it("answers a deduplicated publish as node:http does (201, then 202 with the first id)", async () => {
    const bytes = request(`/v2/publish/${rx().url}/dedup`, "same", {
      ...auth,
      "Upstash-Deduplication-Id": "lane-dedup",
      "Upstash-Delay": "1d",
    });
    const answers = async (env: QueueTestEnv): Promise<string[]> => {
      const client = new RawClient(portOf(env));
      try {
        client.write(Buffer.concat([bytes, bytes]));
        return (await client.responses(2)).map((r) => same(r, false));
      } finally {
        client.destroy();
      }
    };
    const viaLane = await answers(lane());
    expect(viaLane[0]).toMatch(/^HTTP\/1\.1 201 /);
    expect(viaLane[1]).toMatch(/^HTTP\/1\.1 202 [^]*"deduplicated":true/);
    expect(viaLane).toEqual(await answers(plain()));
  });

  it("serves what it declines on the same connection, in order", async () => {
    const client = new RawClient(portOf(lane()));
    try {
      client.write(
        Buffer.concat([
          request(`/v2/publish/${rx().url}/p1`, "1", { ...auth, "Upstash-Delay": "1d" }),
          request(`/v2/publish/${rx().url}/p2`, "2", { Authorization: "Bearer nope" }),
          request(`/v2/publish/${rx().url}/p3`, "3", { ...auth, "Upstash-Delay": "1d" }),
        ]),
      );
      const [a, b, c] = (await client.responses(3)).map((r) => r.toString("latin1"));
      expect(a).toMatch(/^HTTP\/1\.1 201 [^]*\/p1"/);
      expect(b).toMatch(/^HTTP\/1\.1 401 /);
      expect(c).toMatch(/^HTTP\/1\.1 201 [^]*\/p3"/);
    } finally {
      client.destroy();
    }
  });
});

describe("messages published through the lane", () => {
  it("reach the receiver as those published through node:http do", async () => {
    const headers = {
      ...auth,
      "Content-Type": "text/plain",
      "Upstash-Method": "PATCH",
      "Upstash-Forward-X-Thing": "forwarded",
      "Upstash-Header-Forward": "true",
      "X-Own": "own",
    };
    const seen = rx().requests.length;
    await onceOn(portOf(lane()), request(`/v2/publish/${rx().url}/deliver`, "body", headers));
    await onceOn(portOf(plain()), request(`/v2/publish/${rx().url}/deliver`, "body", headers));
    await received(rx(), seen + 1);
    const [a, b] = rx()
      .requests.slice(seen)
      .map((r) => {
        const kept = Object.entries(r.headers).filter(
          ([name]) => !/^(upstash-signature|upstash-message-id|traceparent)$/.test(name),
        );
        return { method: r.method, url: r.url, body: r.body, headers: Object.fromEntries(kept) };
      });
    expect(a).toEqual(b);
    expect(a?.method).toBe("PATCH");
    expect(a?.headers["x-thing"]).toBe("forwarded");
    expect(a?.headers["x-own"]).toBe("own");
    expect(
      rx()
        .requests.slice(seen)
        .every((r) => r.signatureError === undefined),
    ).toBe(true);
  });

  it("are published by the official client", async () => {
    const client = new Client({ baseUrl: lane().stashd.queue.url, token: TEST_TOKEN });
    const answeredBefore = await laneCount("answered", "queue");
    const seen = rx().requests.length;
    const res = await client.publishJSON({ url: `${rx().url}/sdk`, body: { via: "lane" } });
    const queued = await client.queue({ queueName: "lane-sdk" }).enqueueJSON({
      url: `${rx().url}/sdk-queue`,
      body: { via: "enqueue" },
    });
    expect(res.messageId).toMatch(/^msg_/);
    expect(queued.messageId).toMatch(/^msg_/);
    expect((await laneCount("answered", "queue")) - answeredBefore).toBe(2);
    await received(rx(), seen + 1);
    const bodies = rx()
      .requests.slice(seen)
      .map((r) => r.body);
    expect(bodies.sort()).toEqual(['{"via":"enqueue"}', '{"via":"lane"}']);
  });
});
