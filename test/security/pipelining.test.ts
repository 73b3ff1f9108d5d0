import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_PIPELINED } from "../../src/shared/http/server.js";
import { RawClient } from "../harness/raw-http.js";
import type { TestRedis } from "../harness/redis.js";
import { startOnOneRedis, type TestStashd } from "../harness/stashd.js";

/**
 * HTTP/1.1 pipelining from a stranger (docs/reliability.md, threat model): node:http starts every
 * request of a read at once and reads on while their answers are written, so one connection
 * sending GETs without a token, and never stopping, kept the process answering 401s for as long
 * as it liked (200 such connections held every other client past 10 s). A connection with more
 * than MAX_PIPELINED requests unanswered is now closed; up to that many are all answered.
 */
let redis: TestRedis;
let s: TestStashd;

beforeAll(async () => {
  ({ redis, stashd: s } = await startOnOneRedis());
});
afterAll(async () => {
  await s?.stop();
  await redis?.stop();
});

/** `count` GETs in one write, with `auth` header lines. */
function pipelined(count: number, auth = ""): string {
  return `GET /get/pipelined HTTP/1.1\r\nhost: x\r\n${auth}\r\n`.repeat(count);
}

function statusOf(answer: Buffer): string {
  return answer.toString("latin1").split("\r\n")[0] as string;
}

describe("pipelined requests", () => {
  it("answers all of a pipeline up to the limit, in order, and keeps the connection", async () => {
    for (const port of [s.kv.port, s.queue.port]) {
      const client = new RawClient(port);
      const auth = `authorization: Bearer ${port === s.kv.port ? s.kv.token : s.queue.token}\r\n`;
      client.write(pipelined(MAX_PIPELINED, auth));
      const answers = await client.responses(MAX_PIPELINED);
      // The queue has no such route: 404 from the router, after the token was checked.
      const expected = port === s.kv.port ? "HTTP/1.1 200 OK" : "HTTP/1.1 404 Not Found";
      expect(answers.map(statusOf)).toEqual(Array(MAX_PIPELINED).fill(expected));
      expect(client.closed).toBe(false);
      client.destroy();
    }
  });

  it("closes a stranger's connection that pipelines thousands of requests without reading", async () => {
    for (const port of [s.kv.port, s.queue.port, s.admin?.port as number]) {
      const client = new RawClient(port);
      client.reading(false);
      // One 64 KiB read's worth of tiny requests, again and again as a flood would.
      const chunk = pipelined(2_000);
      for (let i = 0; i < 20; i++) client.write(chunk);
      client.reading(true);
      const answers = await client.untilClosed();
      expect(answers.length).toBeLessThanOrEqual(MAX_PIPELINED);
    }
    // Every listener still answers.
    expect((await s.kvFetch("/", { body: '["PING"]' })).status).toBe(200);
  });
});
