import { describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { useCompat, type Compat } from "./context.js";

let c: Compat;
let k: (name: string) => string;

useCompat((ready) => {
  c = ready;
  k = ready.key;
});

async function numsub(channel: string): Promise<number> {
  const reply = await c.direct.exec<[string, number]>(["PUBSUB", "NUMSUB", channel]);
  return reply[1];
}

describe("@upstash/redis publish and PUBSUB", () => {
  it("publishes to nobody and introspects", async () => {
    const { sdk } = c;
    expect(await sdk.publish(k("nobody"), "hello")).toBe(0);
    expect(await sdk.exec(["PUBSUB", "NUMSUB", k("nobody")])).toEqual([k("nobody"), 0]);
    expect(await sdk.exec(["PUBSUB", "NUMPAT"])).toBe(0);
    expect(await sdk.exec(["PUBSUB", "CHANNELS", k("nobody*")])).toEqual([]);
  });
});

describe("@upstash/redis subscribe over SSE", () => {
  it("receives messages on two channels and stops after unsubscribe", async () => {
    const { sdk } = c;
    const [a, b] = [k("chan:a"), k("chan:b")];
    const sub = sdk.subscribe<unknown>([a, b]);
    const counts: number[] = [];
    const got: { channel: string; message: unknown }[] = [];
    const errors: Error[] = [];
    sub.on("subscribe", (n) => counts.push(n));
    sub.on("message", (m) => got.push(m));
    sub.on("error", (e) => errors.push(e));
    // One SSE stream (and one backend connection) per channel: each reports a count of 1.
    await eventually(() => expect(counts).toEqual([1, 1]));
    expect(await sdk.exec(["PUBSUB", "CHANNELS", k("chan:*")])).toEqual(
      expect.arrayContaining([a, b]),
    );

    expect(await sdk.publish(a, "really?")).toBe(1);
    expect(await sdk.publish(b, { n: 1, text: "héllo, wörld ☃" })).toBe(1);
    expect(await sdk.publish(a, "OK")).toBe(1);
    await eventually(() =>
      expect(got).toEqual([
        { channel: a, message: "really?" },
        { channel: b, message: { n: 1, text: "héllo, wörld ☃" } },
        { channel: a, message: "OK" },
      ]),
    );
    expect(sub.getSubscribedChannels()).toEqual([a, b]);

    await sub.unsubscribe([a]);
    // The gateway notices the aborted stream and drops that backend subscription.
    await eventually(async () => expect(await numsub(a)).toBe(0));
    expect(await numsub(b)).toBe(1);
    await sub.unsubscribe();
    await eventually(async () => expect(await numsub(b)).toBe(0));
    expect(errors).toEqual([]);
  });

  it("delivers per-channel events", async () => {
    const { sdk } = c;
    const ch = k("typed");
    const sub = sdk.subscribe<{ id: number }>(ch);
    const typed: { id: number }[] = [];
    sub.on(`message:${ch}`, (m) => typed.push(m.message));
    await eventually(async () => expect(await numsub(ch)).toBe(1));
    await sdk.publish(ch, { id: 7 });
    await sdk.publish(ch, { id: 8 });
    await eventually(() => expect(typed).toEqual([{ id: 7 }, { id: 8 }]));
    await sub.unsubscribe();
    await eventually(async () => expect(await numsub(ch)).toBe(0));
  });
});

describe("@upstash/redis psubscribe over SSE", () => {
  it("receives pattern messages with pattern and channel", async () => {
    const { sdk } = c;
    const pattern = k("news.*");
    const sub = sdk.psubscribe<unknown>(pattern);
    const counts: number[] = [];
    const got: unknown[] = [];
    const errors: Error[] = [];
    sub.on("psubscribe", (n) => counts.push(n));
    sub.on("pmessage", (m) => got.push(m));
    sub.on("error", (e) => errors.push(e));
    await eventually(() => expect(counts).toEqual([1]));
    expect(await sdk.exec(["PUBSUB", "NUMPAT"])).toBe(1);

    expect(await sdk.publish(k("news.tech"), { title: "RESP2, 100%" })).toBe(1);
    expect(await sdk.publish(k("news.art"), 42)).toBe(1);
    expect(await sdk.publish(k("other"), 1)).toBe(0);
    await eventually(() =>
      expect(got).toEqual([
        { pattern, channel: k("news.tech"), message: { title: "RESP2, 100%" } },
        { pattern, channel: k("news.art"), message: 42 },
      ]),
    );
    await sub.unsubscribe();
    await eventually(async () => expect(await c.direct.exec(["PUBSUB", "NUMPAT"])).toBe(0));
    expect(errors).toEqual([]);
  });
});
