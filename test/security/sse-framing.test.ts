import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { freePort, startRedis, type TestRedis } from "../harness/redis.js";
import { openSse, type SseStream } from "../harness/sse.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";

/**
 * Issue 25, item 11: channel names, patterns and messages with line breaks must not break the
 * event-stream framing. Each Redis push arrives as exactly one event, read both by a parser
 * following the SSE spec (CR, LF and CRLF all end lines) and by @upstash/redis's subscriber.
 */
const NASTY = ["a\nb", "a\rb", "a\r\nb", "a\n\ndata: forged", "\r\n\r\ndata: message,x,forged\n"];
let redis: TestRedis;
let s: TestStashd;

beforeAll(async () => {
  redis = await startRedis([], await freePort());
  s = await startStashd({ kvRedisUrl: redis.url });
});
afterAll(async () => {
  await s?.stop();
  await redis?.stop();
});

/** The events of a stream as the SSE spec reads them: data lines joined by LF, one per blank line. */
function specEvents(raw: string): string[] {
  const events: string[] = [];
  let data: string[] = [];
  for (const line of raw.split(/\r\n|\r|\n/)) {
    if (line === "") {
      if (data.length > 0) events.push(data.join("\n"));
      data = [];
    } else if (line.startsWith("data:")) {
      data.push(line.slice(line.startsWith("data: ") ? 6 : 5));
    }
  }
  return events;
}

/** A field as stashd sends it: as it is, or JSON-quoted (commas as \u002c) when it holds CR or LF. */
const sent = (text: string): string =>
  /[\r\n]/.test(text) ? JSON.stringify(text).replaceAll(",", "\\u002c") : text;

async function publish(channel: string, message: string): Promise<void> {
  const res = await s.kvFetch("/", { body: JSON.stringify(["PUBLISH", channel, message]) });
  expect(await res.json()).toEqual({ result: expect.any(Number) });
}

async function numsub(channel: string): Promise<number> {
  const res = await s.kvFetch("/", { body: JSON.stringify(["PUBSUB", "NUMSUB", channel]) });
  const { result } = (await res.json()) as { result: [string, number] };
  return result[1];
}

function streamOf(path: string): Promise<SseStream> {
  return openSse(`${s.kv.url}${path}`, s.kv.token);
}

describe("raw event streams", () => {
  it("delivers channels and messages with CR, LF and forged lines as one event each", async () => {
    for (const channel of NASTY) {
      const stream = await streamOf(`/subscribe/${encodeURIComponent(channel)}`);
      expect(stream.status).toBe(200);
      for (const message of NASTY) await publish(channel, message);
      const expected = [
        `subscribe,${sent(channel)},1`,
        ...NASTY.map((m) => `message,${sent(channel)},${sent(m)}`),
      ];
      await eventually(() => expect(specEvents(stream.raw())).toEqual(expected));
      // Every message restores exactly from its JSON quoting.
      for (const [i, m] of NASTY.entries()) {
        const event = specEvents(stream.raw())[i + 1] ?? "";
        expect(JSON.parse(event.slice(`message,${sent(channel)},`.length))).toBe(m);
      }
      stream.close();
    }
  });

  it("does the same for patterns and the channels they match", async () => {
    const pattern = "p\n*";
    const stream = await streamOf(`/psubscribe/${encodeURIComponent(pattern)}`);
    expect(stream.status).toBe(200);
    const channels = NASTY.map((c) => `p\n${c}`);
    for (const channel of channels) await publish(channel, channel);
    await eventually(() =>
      expect(specEvents(stream.raw())).toEqual([
        `psubscribe,${sent(pattern)},1`,
        ...channels.map((c) => `pmessage,${sent(pattern)},${sent(c)},${sent(c)}`),
      ]),
    );
    stream.close();
  });

  it("keeps MONITOR lines one event each", async () => {
    const stream = await streamOf("/monitor");
    expect(stream.status).toBe(200);
    await eventually(() => expect(specEvents(stream.raw())).toEqual(['"OK"']));
    await publish("mon\nitor", "x\r\n\r\ndata: forged");
    await eventually(() => {
      const events = specEvents(stream.raw());
      const line = events.find((e) => e.includes('"PUBLISH"'));
      expect(line).toMatch(
        /^\d+\.\d+ \[0 0\.0\.0\.0:0\] "PUBLISH" "mon\\nitor" "x\\r\\n\\r\\ndata: forged"$/,
      );
      expect(events.filter((e) => e.includes("forged"))).toHaveLength(1);
    });
    stream.close();
  });
});

describe("@upstash/redis subscriber", () => {
  it("gets each message exactly once and unchanged, and no forged event", async () => {
    const sdk = new Redis({ url: s.kv.url, token: s.kv.token });
    const channel = "sdk:plain";
    const sub = sdk.subscribe<unknown>([channel]);
    const got: { channel: string; message: unknown }[] = [];
    const errors: Error[] = [];
    sub.on("message", (m) => got.push(m));
    sub.on("error", (e) => errors.push(e));
    await eventually(async () => expect(await numsub(channel)).toBe(1));
    for (const m of NASTY) await publish(channel, m);
    await eventually(() => expect(got).toEqual(NASTY.map((message) => ({ channel, message }))));
    await sub.unsubscribe();
    expect(errors).toEqual([]);
  });

  it("gets pattern messages from channels with line breaks as one event each", async () => {
    const sdk = new Redis({ url: s.kv.url, token: s.kv.token });
    const sub = sdk.psubscribe<unknown>(["sdkp:*"]);
    const got: { pattern: string; channel: string; message: unknown }[] = [];
    const errors: Error[] = [];
    sub.on("pmessage", (m) => got.push(m));
    sub.on("error", (e) => errors.push(e));
    const numpat = async (): Promise<number> => {
      const res = await s.kvFetch("/", { body: '["PUBSUB","NUMPAT"]' });
      return ((await res.json()) as { result: number }).result;
    };
    await eventually(async () => expect(await numpat()).toBe(1));
    const channels = NASTY.map((c) => `sdkp:${c}`);
    // JSON payloads: the SDK parses pmessage payloads as JSON without fallback.
    for (const c of channels) await publish(c, JSON.stringify({ c }));
    // The channel, which the SDK does not decode, arrives JSON-quoted; the message as published.
    await eventually(() =>
      expect(got).toEqual(
        channels.map((c) => ({ pattern: "sdkp:*", channel: sent(c), message: { c } })),
      ),
    );
    await sub.unsubscribe();
    expect(errors).toEqual([]);
  });
});
