import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { originOf } from "../../src/queue/delivery/destination-share.js";
import { ScriptCode } from "../../src/queue/store/codes.js";
import { queueKeys, QUEUE_PREFIX } from "../../src/queue/store/keys.js";
import { transitions } from "../../src/queue/store/transitions.js";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import { startRedis, testPool, type TestRedis } from "../harness/redis.js";
import { isKeyRefusal, runEveryTransition, ScriptGuard } from "./lua-guard.js";

/**
 * The queue's Lua scripts (src/queue/store/lua) keep their contracts: each declares its KEYS in
 * its header (`--@keys`, named as in store/keys.ts) and touches no other key except those the
 * key-name include (includes/keys.lua) builds, which build the same names as store/keys.ts; the
 * status codes (includes/codes.lua) are store/codes.ts's. The key rule is checked by running
 * every script as a Redis ACL user allowed only those keys (see lua-guard.ts).
 */
const DIR = path.resolve("src/queue/store/lua");
const INCLUDES = path.join(DIR, "includes");

let redis: TestRedis;
let pool: RedisPool;

beforeAll(async () => {
  redis = await startRedis();
  pool = testPool(redis.url, 2);
});
afterAll(async () => {
  await pool?.close();
  await redis?.stop();
});

/** Runs an include file's Lua followed by `tail` (the include must need no other include). */
async function evalInclude(include: string, tail: string, argv: string[] = []): Promise<unknown> {
  const text = `${readFileSync(path.join(INCLUDES, include), "utf8")}\n${tail}`;
  const reply = await pool.exec(["EVAL", text, "0", ...argv]);
  if (reply.kind !== "bulk") throw new Error(`unexpected reply ${JSON.stringify(reply)}`);
  return JSON.parse(reply.value.toString()) as unknown;
}

/** What includes/keys.lua builds for each of its names, with id `id`. */
async function luaKeyNames(id: string): Promise<Record<string, string>> {
  const tail = `local out = {}
for name, v in pairs(Key) do
  if type(v) == 'function' then out[name] = v(ARGV[2]) else out[name] = v end
end
return cjson.encode(out)`;
  return (await evalInclude("keys.lua", tail, [QUEUE_PREFIX, id])) as Record<string, string>;
}

describe("queue Lua script headers", () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith(".lua"));

  it("loads every script file as a transition named in its first line", () => {
    const loaded = Object.values(transitions).map((t) => `${t.script.name}.lua`);
    expect(loaded.sort()).toEqual([...files].sort());
    for (const [name, t] of Object.entries(transitions)) {
      expect(t.script.text.split("\n")[1], t.script.name).toMatch(new RegExp(`^-- ${name}: `));
    }
  });

  it("declares its KEYS by store/keys.ts names and uses no KEYS[n] beyond them", () => {
    for (const { script } of Object.values(transitions)) {
      const declared = script.keys ?? [];
      expect(declared.length, script.name).toBeGreaterThan(0);
      for (const name of declared) expect(queueKeys, script.name).toHaveProperty(name);
      const used = [...script.text.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1]));
      expect(Math.max(0, ...used), script.name).toBeLessThanOrEqual(declared.length);
    }
  });

  it("builds key names only in includes/keys.lua", () => {
    const sources = [
      ...files.map((f) => path.join(DIR, f)),
      ...readdirSync(INCLUDES)
        .filter((f) => f !== "keys.lua")
        .map((f) => path.join(INCLUDES, f)),
    ];
    for (const file of sources) {
      const code = readFileSync(file, "utf8").replace(/--.*$/gm, "");
      expect(code, file).not.toMatch(/\bPREFIX\b|\bprefix\b|ARGV\[1\]\s*\.\./);
    }
  });
});

describe("tables shared by Lua and TypeScript", () => {
  it("builds the same key names in includes/keys.lua as store/keys.ts", async () => {
    const lua = await luaKeyNames("some-id");
    expect(Object.keys(lua).length).toBeGreaterThanOrEqual(8);
    const ts = queueKeys as unknown as Record<string, string | ((id: string) => string)>;
    for (const [name, built] of Object.entries(lua)) {
      const expected = ts[name];
      expect(expected, `queueKeys.${name}`).toBeDefined();
      expect(built, name).toBe(typeof expected === "function" ? expected("some-id") : expected);
    }
  });

  it("computes a URL's origin in includes/origin.lua as delivery/destination-share.ts does", async () => {
    const urls = [
      "http://a.example/x",
      "HTTPS://User:Pw@Example.COM:8443/Path?Q=1#F",
      "http://127.0.0.1:8080?x=1",
      "http://[::1]:9000/p",
      "http://host.example#frag",
      "svc+ws.v2://Host/",
      "no-scheme/At/All",
      "",
    ];
    const tail = `local out = {}
for i = 1, #ARGV do out[#out + 1] = {urlOrigin(ARGV[i]), metaOrigin(ARGV[i])} end
return cjson.encode(out)`;
    const metas = urls.map((url) => JSON.stringify({ messageId: "m", url, header: { url: "x" } }));
    const lua = (await evalInclude("origin.lua", tail, urls)) as string[][];
    const fromMeta = (await evalInclude("origin.lua", tail, metas)) as string[][];
    expect(lua.map((pair) => pair[0])).toEqual(urls.map(originOf));
    expect(fromMeta.map((pair) => pair[1])).toEqual(urls.map(originOf));
  });

  it("has the same status codes in includes/codes.lua as store/codes.ts", async () => {
    expect(await evalInclude("codes.lua", "return cjson.encode(Code)")).toEqual(ScriptCode);
  });
});

describe("keys a script touches", () => {
  let guard: ScriptGuard;

  beforeAll(async () => {
    guard = await ScriptGuard.start(redis.url, Object.values(await luaKeyNames("*")));
  });
  afterAll(async () => {
    await guard?.close();
  });

  it("refuses a script touching a key it neither declares nor builds with keys.lua", async () => {
    const reply = await guard.pool.exec([
      "EVAL",
      `return redis.call('ZCARD', ARGV[1])`,
      "0",
      queueKeys.due,
    ]);
    expect(isKeyRefusal(reply)).toBe(true);
    guard.refusals.length = 0;
  });

  it("runs every transition touching only its KEYS and the names keys.lua builds", async () => {
    await runEveryTransition(guard.pool);
    expect(guard.refusals).toEqual([]);
    const ran = new Set(guard.ran);
    const missing = Object.values(transitions).filter((t) => !ran.has(t.script.sha));
    expect(missing.map((t) => t.script.name)).toEqual([]);
  });
});
