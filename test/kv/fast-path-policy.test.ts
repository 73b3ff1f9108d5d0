import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blockingCall } from "../../src/kv/commands/blocking.js";
import { isScriptCall, stepsOf } from "../../src/kv/commands/execute.js";
import { gatewayCommand } from "../../src/kv/commands/gateway-commands.js";
import {
  parseCommandTable,
  refusalOf,
  type CommandTable,
  type PolicyOptions,
} from "../../src/kv/commands/policy.js";
import { rewriteCommand, ScriptAliases } from "../../src/kv/commands/rewrite.js";
import { traitsOf } from "../../src/kv/commands/traits.js";
import { parseRedisUrl, RedisConnection } from "../../src/shared/redis/connection.js";
import type { Arg } from "../../src/shared/redis/resp.js";
import { pick, seeded } from "../harness/random.js";
import { startRedis, type TestRedis } from "../harness/redis.js";

/**
 * The fast path's decision and the policy come from one command-traits table
 * (src/kv/commands/traits.ts). Property: a command the fast path takes (`plain`: the policy and
 * gateway steps skipped) is one that no policy option would refuse, no gateway step would serve,
 * no script watch or blocking step would treat, and that no rewrite would change unless the fast
 * path rewrites it too, whatever its arguments. Checked on random commands (every name of a real
 * backend's COMMAND table, the table's names and unknown ones, in random casings) with random
 * arguments drawn from the words the rules look for; seeded, so a failure replays.
 */
const SEED = Number(process.env["FAST_PATH_SEED"] ?? 20261127);
const ROUNDS = 20_000;

/** Words some rule reads, and a few it does not. */
const WORDS = [
  "db",
  "DB",
  "0",
  "1",
  "-1",
  "block",
  "BLOCK",
  "streams",
  "count",
  "group",
  "noack",
  "set",
  "rewrite",
  "get",
  "setuser",
  "deluser",
  "default",
  "default_ro",
  "stashd_standard",
  "withtype",
  "WithType",
  "resttoken",
  "debug",
  "yes",
  "load",
  "#!lua flags=allow-key-locking\nreturn 1",
  "return 1",
  "~",
  "maxlen",
  "keys",
  "k",
  "",
  "\u00e9",
];

const OPTIONS: PolicyOptions[] = [
  {},
  { allowMigrate: true },
  { allowMigrate: false, blocking: "shared" },
  { blocking: "exclusive" },
  { blocking: "transaction" },
];

function randomCasing(rand: () => number, name: string): string {
  const r = rand();
  if (r < 0.4) return name.toUpperCase();
  if (r < 0.7) return name;
  return [...name].map((c) => (rand() < 0.5 ? c.toUpperCase() : c)).join("");
}

function randomArgs(rand: () => number): Arg[] {
  const n = Math.floor(rand() * 6);
  return Array.from({ length: n }, () =>
    rand() < 0.85 ? pick(rand, WORDS) : Buffer.from([Math.floor(rand() * 256)]),
  );
}

/** What a step other than sending would do to a command the fast path took, if anything. */
function treatedBeyondFastPath(argv: Arg[], table: CommandTable, rewritten: boolean): string[] {
  const found: string[] = [];
  for (const opts of OPTIONS) {
    const why = refusalOf(argv, table, opts);
    if (why !== undefined) found.push(`refused with ${JSON.stringify(opts)}: ${why}`);
  }
  if (gatewayCommand(argv) !== undefined) found.push("served by the gateway");
  if (isScriptCall(argv)) found.push("a script call");
  if (blockingCall(argv, table) !== undefined) found.push("a blocking call");
  if (!rewritten && rewriteCommand(argv, new ScriptAliases()) !== argv) found.push("rewritten");
  return found;
}

describe("the fast path and the policy, from one command-traits table", () => {
  let redis: TestRedis | undefined;
  let table: CommandTable = new Map();

  beforeAll(async () => {
    redis = await startRedis();
    const conn = await RedisConnection.open(parseRedisUrl(redis.url), 5_000);
    table = parseCommandTable(await conn.send(["COMMAND"]));
    conn.destroy();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it("never lets the fast path take a command a rule would refuse, serve or rewrite", () => {
    const rand = seeded(SEED);
    const names = [
      ...[...table.keys()].filter((n) => !n.includes("|")),
      "nosuchcommand",
      "g\u00e9t",
    ];
    const failures: string[] = [];
    let plain = 0;
    for (let i = 0; i < ROUNDS && failures.length < 5; i++) {
      const argv: Arg[] = [randomCasing(rand, pick(rand, names)), ...randomArgs(rand)];
      const steps = stepsOf(argv, table);
      if (!steps.plain) continue;
      plain++;
      const found = treatedBeyondFastPath(argv, table, steps.rewritten);
      if (found.length > 0) failures.push(`${JSON.stringify(argv)} (seed ${SEED}): ${found[0]}`);
    }
    expect(failures).toEqual([]);
    // Both sides were exercised: most names are plain, the ruled ones are not.
    expect(plain).toBeGreaterThan(ROUNDS / 2);
    expect(plain).toBeLessThan(ROUNDS);
  });

  it("leaves every name with a trait read beyond the name to its step", () => {
    for (const name of ["acl", "config", "scan", "copy", "migrate", "eval", "fcall_ro", "xread"]) {
      expect(stepsOf([name], table).plain, name).toBe(false);
    }
    // Names the policy decides by name alone keep the fast path when it lets them through.
    expect(traitsOf("ping")).toEqual(["harmless-connection"]);
    expect(stepsOf(["PING"], table).plain).toBe(true);
    expect(stepsOf(["publish"], table).plain).toBe(true);
    expect(stepsOf(["GET"], table).plain).toBe(true);
  });
});
