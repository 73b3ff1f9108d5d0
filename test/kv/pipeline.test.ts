import { describe, expect, it } from "vitest";
import { testPool } from "../harness/redis.js";
import { bodyOf, command, useGateway } from "./helpers.js";

const { stashd, redis } = useGateway();

describe("/pipeline", () => {
  it("returns one item per command in order, errors per item with 200", async () => {
    const res = await stashd().kvFetch("/pipeline", {
      body: JSON.stringify([
        ["SET", "pl:a", "1"],
        ["INCR", "pl:a"],
        ["HGET", "pl:a", "f"],
        ["WAIT", 0, 0],
        ["NOSUCHCOMMAND"],
        ["GET", "pl:a"],
      ]),
    });
    expect(res.status).toBe(200);
    expect(await bodyOf(res)).toEqual([
      { result: "OK" },
      { result: 2 },
      { error: "WRONGTYPE Operation against a key holding the wrong kind of value" },
      { error: expect.stringContaining('"WAIT" is not allowed in REST') },
      { error: expect.stringContaining("unknown command") },
      { result: "2" },
    ]);
  });

  it("emulates and rewrites commands in any casing beside plain ones (per-name caches)", async () => {
    const script = "#!lua flags=allow-key-locking\nreturn redis.call('INCR', KEYS[1])";
    const run = async (): Promise<unknown> =>
      bodyOf(
        await stashd().kvFetch("/pipeline", {
          body: JSON.stringify([
            ["Json.Set", "pl:j", "$", '{"a":1}'],
            ["json.get", "pl:j", "$.a"],
            ["XADD", "pl:s", "1-1", "f", "v"],
            ["xAdd", "pl:s", "2-1", "f", "v"],
            ["xtrim", "pl:s", "MAXLEN", "~", "1"],
            ["eVaL", script, "1", "pl:n"],
            ["get", "pl:n"],
          ]),
        }),
      );
    expect(await run()).toEqual([
      { result: "OK" },
      { result: "[1]" },
      { result: "1-1" },
      { result: "2-1" },
      { result: 1 },
      { result: 1 },
      { result: "1" },
    ]);
    await stashd().kvFetch("/pipeline", { body: JSON.stringify([["DEL", "pl:s"]]) });
    // Asked again, now from the caches: the same replies (XADD's ids need the stream gone).
    expect(((await run()) as unknown[]).slice(0, 5)).toEqual([
      { result: "OK" },
      { result: "[1]" },
      { result: "1-1" },
      { result: "2-1" },
      { result: 1 },
    ]);
  });

  it("refuses an empty pipeline and a flat array", async () => {
    expect((await stashd().kvFetch("/pipeline", { body: "[]" })).status).toBe(400);
    const flat = await stashd().kvFetch("/pipeline", { body: '["GET","k"]' });
    expect(flat.status).toBe(400);
    expect(await bodyOf(flat)).toEqual({
      error: expect.stringContaining("array of command arrays"),
    });
  });

  it("handles a thousand commands", async () => {
    const commands = Array.from({ length: 1000 }, (_, i) => ["SET", `pl:many:${i}`, String(i)]);
    const res = await stashd().kvFetch("/pipeline", { body: JSON.stringify(commands) });
    const items = (await bodyOf(res)) as unknown[];
    expect(items).toHaveLength(1000);
    expect((await command(stashd(), ["GET", "pl:many:999"])).body).toEqual({ result: "999" });
  });

  it("keeps each request's replies when pipelines and single commands are sent at once", async () => {
    // Sent at once: pipelines read straight into RESP beside single commands and pipelines
    // with a number (the general path); encoded-exchange.test.ts pins a shared write itself.
    const replies = await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        if (i % 3 === 2) return (await command(stashd(), ["ECHO", `e${i}`])).body;
        const body =
          i % 3 === 0
            ? JSON.stringify([
                ["SET", `mx:${i}`, `v${i}`],
                ["GET", `mx:${i}`],
                ["ECHO", `p${i}`],
              ])
            : `[["SET","mx:${i}",${i}],["GET","mx:${i}"],["ECHO","p${i}"]]`;
        return bodyOf(await stashd().kvFetch("/pipeline", { body }));
      }),
    );
    replies.forEach((reply, i) => {
      if (i % 3 === 2) expect(reply).toEqual({ result: `e${i}` });
      else {
        const value = i % 3 === 0 ? `v${i}` : String(i);
        expect(reply).toEqual([{ result: "OK" }, { result: value }, { result: `p${i}` }]);
      }
    });
  });

  it("refuses GET", async () => {
    expect((await stashd().kvFetch("/pipeline", { method: "GET" })).status).toBe(405);
  });
});

describe("/multi-exec", () => {
  it("runs atomically and keeps runtime errors per item", async () => {
    await command(stashd(), ["SET", "tx:s", "text"]);
    const res = await stashd().kvFetch("/multi-exec", {
      body: JSON.stringify([
        ["SET", "tx:a", "1"],
        ["INCR", "tx:s"],
        ["INCR", "tx:a"],
      ]),
    });
    expect(res.status).toBe(200);
    expect(await bodyOf(res)).toEqual([
      { result: "OK" },
      { error: "ERR value is not an integer or out of range" },
      { result: 2 },
    ]);
  });

  it("refuses the whole transaction when one command is unsupported", async () => {
    const res = await stashd().kvFetch("/multi-exec", {
      body: JSON.stringify([
        ["SET", "tx:never", "1"],
        ["WATCH", "tx:never"],
      ]),
    });
    expect(res.status).toBe(400);
    expect(await bodyOf(res)).toEqual({ error: expect.stringContaining("WATCH") });
    expect((await command(stashd(), ["EXISTS", "tx:never"])).body).toEqual({ result: 0 });
  });

  it("returns EXECABORT as one 400 error when Redis rejects a queued command", async () => {
    const res = await stashd().kvFetch("/multi-exec", {
      body: JSON.stringify([["SET", "tx:abort", "1"], ["GET"]]),
    });
    expect(res.status).toBe(400);
    expect(await bodyOf(res)).toEqual({ error: expect.stringContaining("EXECABORT") });
    expect((await command(stashd(), ["EXISTS", "tx:abort"])).body).toEqual({ result: 0 });
  });

  it("keeps concurrent transactions apart", async () => {
    await command(stashd(), ["SET", "tx:counter", "0"]);
    const body = JSON.stringify([
      ["INCR", "tx:counter"],
      ["INCR", "tx:counter"],
    ]);
    const results = await Promise.all(
      Array.from(
        { length: 20 },
        async () =>
          (await bodyOf(await stashd().kvFetch("/multi-exec", { body }))) as { result: number }[],
      ),
    );
    for (const [a, b] of results) expect((b?.result ?? 0) - (a?.result ?? 0)).toBe(1);
    expect((await command(stashd(), ["GET", "tx:counter"])).body).toEqual({ result: "40" });
  });

  it("sends short transactions on the shared pooled connections, not one connection each", async () => {
    const body = JSON.stringify([
      ["INCR", "tx:shared"],
      ["GET", "tx:shared"],
    ]);
    await command(stashd(), ["PING"]);
    const probe = testPool(redis().url, 1);
    const connectionsSoFar = async (): Promise<number> => {
      const reply = await probe.exec(["INFO", "stats"]);
      const info = reply.kind === "bulk" ? reply.value.toString() : "";
      return Number(/total_connections_received:(\d+)/.exec(info)?.[1]);
    };
    try {
      const before = await connectionsSoFar();
      await Promise.all(
        Array.from({ length: 60 }, () => stashd().kvFetch("/multi-exec", { body })),
      );
      // At most the rest of the pools opening (4 connections each by default); an exclusive
      // connection per concurrent transaction would open about 60.
      expect((await connectionsSoFar()) - before).toBeLessThan(10);
    } finally {
      await probe.close();
    }
    expect((await command(stashd(), ["GET", "tx:shared"])).body).toEqual({ result: "60" });
  });
});
