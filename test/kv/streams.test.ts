import { describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { openSse } from "../harness/sse.js";
import { command, useGateway } from "./helpers.js";

const { stashd } = useGateway({ sseKeepAliveMs: 50 });

async function subscribers(...channels: string[]): Promise<unknown> {
  return (await command(stashd(), ["PUBSUB", "NUMSUB", ...channels])).body;
}

describe("SSE streams", () => {
  it("delivers subscribe and message events with the exact lines", async () => {
    const s = await openSse(`${stashd().kv.url}/subscribe/chat`, stashd().kv.token);
    expect(s.status).toBe(200);
    await eventually(() => expect(s.lines).toEqual(["subscribe,chat,1"]));
    await command(stashd(), ["PUBLISH", "chat", "hello, world"]);
    await command(stashd(), ["PUBLISH", "chat", "two\nlines"]);
    await eventually(() =>
      expect(s.lines).toEqual([
        "subscribe,chat,1",
        "message,chat,hello, world",
        'message,chat,"two\\nlines"',
      ]),
    );
    s.close();
  });

  it("delivers pattern messages on /psubscribe", async () => {
    const s = await openSse(`${stashd().kv.url}/psubscribe/news.*`, stashd().kv.token);
    await eventually(() => expect(s.lines).toEqual(["psubscribe,news.*,1"]));
    await command(stashd(), ["PUBLISH", "news.tech", '{"a":1}']);
    await eventually(() => expect(s.lines[1]).toBe('pmessage,news.*,news.tech,{"a":1}'));
    s.close();
  });

  it("publishes through the path form", async () => {
    const s = await openSse(`${stashd().kv.url}/subscribe/room`, stashd().kv.token);
    await eventually(() => expect(s.lines).toHaveLength(1));
    const res = await stashd().kvFetch("/publish/room/hi%20there", { method: "GET" });
    expect(await res.json()).toEqual({ result: 1 });
    await eventually(() => expect(s.lines[1]).toBe("message,room,hi there"));
    s.close();
  });

  it("sends keep-alive comments on idle streams", async () => {
    const s = await openSse(`${stashd().kv.url}/subscribe/idle`, stashd().kv.token);
    await eventually(() => expect(s.raw()).toContain(": keepalive\n\n"));
    s.close();
  });

  it("streams MONITOR lines with the client address masked", async () => {
    const s = await openSse(`${stashd().kv.url}/monitor`, stashd().kv.token);
    await eventually(() => expect(s.lines[0]).toBe('"OK"'));
    await command(stashd(), ["GET", "monitored-key"]);
    await eventually(() =>
      expect(
        s.lines.some((l) => /^\d+\.\d+ \[0 0\.0\.0\.0:0\] "GET" "monitored-key"$/.test(l)),
      ).toBe(true),
    );
    s.close();
  });

  it("releases the backend connection when the client goes away", async () => {
    const names = ["gone1", "gone2", "gone3"];
    const streams = await Promise.all(
      names.map((n) => openSse(`${stashd().kv.url}/subscribe/${n}`, stashd().kv.token)),
    );
    await eventually(async () =>
      expect(await subscribers(...names)).toEqual({ result: ["gone1", 1, "gone2", 1, "gone3", 1] }),
    );
    for (const s of streams) s.close();
    await eventually(async () =>
      expect(await subscribers(...names)).toEqual({ result: ["gone1", 0, "gone2", 0, "gone3", 0] }),
    );
  });

  it("refuses a missing channel and MONITOR for the read-only token", async () => {
    const empty = await openSse(`${stashd().kv.url}/subscribe`, stashd().kv.token);
    expect(empty.status).toBe(400);
    const ro = await openSse(`${stashd().kv.url}/monitor`, stashd().kv.readonlyToken);
    expect(ro.status).toBe(400);
    expect(JSON.parse(ro.body)).toEqual({ error: expect.stringContaining("NOPERM") });
  });

  it("lets the read-only token subscribe", async () => {
    const s = await openSse(`${stashd().kv.url}/subscribe/ro-chan`, stashd().kv.readonlyToken);
    await eventually(() => expect(s.lines).toEqual(["subscribe,ro-chan,1"]));
    s.close();
  });
});
