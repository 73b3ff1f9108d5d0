import { describe, expect, it } from "vitest";
import { originOf } from "../../src/queue/delivery/destination-share.js";
import type { MessageMeta } from "../../src/queue/domain/message.js";
import { queueKeys } from "../../src/queue/store/keys.js";
import type { NewMessage } from "../../src/queue/store/message-store.js";
import { message, storeOnOwnRedis } from "./lua-guard.js";

/**
 * The claim decides by a message's stored `origin` field (lua/includes/origin.lua), so skipping
 * a destination at its share never reads a meta or a body; a message stored by an older version,
 * without that field, is still claimed and counted by the URL in its meta.
 */
const LEASE_MS = 60_000;
const ctx = storeOnOwnRedis();

const msg = (id: string, url: string, now: number): NewMessage => message(id, now, { url });

const field = async (id: string, name: string): Promise<string | undefined> => {
  const reply = await ctx.pool.exec(["HGET", queueKeys.message(id), name]);
  return reply.kind === "bulk" ? reply.value.toString() : undefined;
};

/** Stores the messages as a version before the `origin` field did. */
async function storeAsOlderVersion(now: number, messages: NewMessage[]): Promise<void> {
  await ctx.store.enqueue(now, messages);
  for (const m of messages)
    await ctx.pool.exec(["HDEL", queueKeys.message(m.meta.messageId), "origin"]);
}

const ids = (claimed: { meta: MessageMeta }[]) => claimed.map((c) => c.meta.messageId);

describe("the origin a claim counts a message by", () => {
  it("is stored in the message hash as originOf computes it", async () => {
    const now = Date.now();
    const url = "HTTP://Example.COM:8080/Path?q=Upper#x";
    await ctx.store.enqueue(now, [msg("m1", url, now)]);
    expect(await field("m1", "origin")).toBe(originOf(url));
    expect(originOf(url)).toBe("http://example.com:8080");
  });

  it("skips messages of a destination at its share by that field and claims the others", async () => {
    const now = Date.now();
    const busy = "http://busy.example:1";
    await ctx.store.enqueue(now, [
      msg("b1", `${busy}/1`, now),
      msg("o1", "http://other.example/1", now),
      msg("b2", `${busy}/2`, now),
    ]);
    const fair = { cap: 2, scan: 100, inflight: [[busy, 2]] as [string, number][] };
    const first = await ctx.store.claim(now, 10, LEASE_MS, fair);
    expect(ids(first.claimed)).toEqual(["o1"]);
    expect(first.claimed[0]?.body.toString()).toBe("body of o1");
    expect(first.skipped).toBe(2);
    const later = await ctx.store.claim(now, 10, LEASE_MS, { ...fair, inflight: [[busy, 0]] });
    expect(ids(later.claimed)).toEqual(["b1", "b2"]);
  });

  it("is computed from the meta for a message stored without the field", async () => {
    const now = Date.now();
    const busy = "http://Busy.example:1";
    await storeAsOlderVersion(now, [
      msg("old-b", `${busy}/x`, now),
      msg("old-o", "http://other.example/y", now),
    ]);
    expect(await field("old-b", "origin")).toBeUndefined();
    const fair = { cap: 1, scan: 100, inflight: [[originOf(busy), 1]] as [string, number][] };
    const first = await ctx.store.claim(now, 10, LEASE_MS, fair);
    expect(ids(first.claimed)).toEqual(["old-o"]);
    expect(first.skipped).toBe(1);
    const later = await ctx.store.claim(now, 10, LEASE_MS, { ...fair, inflight: [] });
    expect(ids(later.claimed)).toEqual(["old-b"]);
    expect(later.claimed[0]?.meta.url).toBe(`${busy}/x`);
    expect(later.claimed[0]?.body.toString()).toBe("body of old-b");
  });

  it("drops due entries whose message is gone, with or without the field", async () => {
    const now = Date.now();
    await ctx.store.enqueue(now, [msg("gone", "http://a.example/", now)]);
    await storeAsOlderVersion(now, [msg("gone-old", "http://a.example/", now)]);
    await ctx.store.enqueue(now, [msg("kept", "http://a.example/", now)]);
    await ctx.pool.exec(["DEL", queueKeys.message("gone"), queueKeys.message("gone-old")]);
    const { claimed, skipped } = await ctx.store.claim(now, 10, LEASE_MS);
    expect(ids(claimed)).toEqual(["kept"]);
    expect(skipped).toBe(0);
    expect(await ctx.pool.exec(["ZCARD", queueKeys.due])).toEqual({ kind: "int", value: "0" });
  });
});
