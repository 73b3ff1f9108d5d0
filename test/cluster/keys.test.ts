import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  keysOf,
  parseRoutingTable,
  routingOf,
  textOf,
  type CommandTable,
} from "../../src/shared/redis/cluster/commands.js";
import type { Reply } from "../../src/shared/redis/resp.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { RedisConnection } from "../../src/shared/redis/connection.js";

/**
 * The key positions stashd reads from COMMAND's key specs agree with the server's own
 * COMMAND GETKEYS, command line by command line (a single redis-server answers both).
 */
let redis: TestRedis;
let conn: RedisConnection;
let table: CommandTable;

beforeAll(async () => {
  redis = await startRedis();
  conn = await RedisConnection.open({ host: "127.0.0.1", port: redis.port }, 2_000);
  table = parseRoutingTable(await conn.send(["COMMAND"]));
});
afterAll(async () => {
  conn.destroy();
  await redis.stop();
});

const LINES: string[][] = [
  ["GET", "a"],
  ["SET", "a", "1", "EX", "10"],
  ["MSET", "a", "1", "b", "2", "c", "3"],
  ["MGET", "a", "b", "c"],
  ["DEL", "a", "b"],
  ["EVAL", "return 1", "2", "k1", "k2", "arg"],
  ["EVALSHA_RO", "0".repeat(40), "1", "k1", "arg"],
  ["FCALL", "f", "2", "k1", "k2"],
  ["ZUNIONSTORE", "dest", "2", "z1", "z2", "WEIGHTS", "1", "2"],
  ["ZINTER", "2", "z1", "z2"],
  ["LMPOP", "2", "l1", "l2", "LEFT"],
  ["BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"],
  ["XREAD", "COUNT", "2", "STREAMS", "s1", "s2", "0", "0"],
  ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s1", "0"],
  ["GEORADIUS", "geo", "0", "0", "10", "km", "STORE", "dst"],
  ["OBJECT", "ENCODING", "a"],
  ["XINFO", "STREAM", "s1"],
  ["MEMORY", "USAGE", "a"],
  ["BITOP", "AND", "dst", "a", "b"],
  ["SINTERCARD", "2", "s1", "s2", "LIMIT", "1"],
  ["RENAME", "a", "b"],
  ["COPY", "a", "b", "REPLACE"],
  ["LCS", "a", "b"],
  ["PFMERGE", "dst", "h1", "h2"],
];

function texts(reply: Reply): string[] {
  return reply.kind === "array" ? reply.value.map((r) => textOf(r) ?? "") : [];
}

describe("key positions from COMMAND key specs", () => {
  it.each(LINES.map((line) => [line.join(" "), line] as const))("%s", async (_, line) => {
    const routing = routingOf(table, line);
    expect(routing).toBeDefined();
    const mine = keysOf(routing as NonNullable<typeof routing>, line)?.map(String);
    const server = texts(await conn.send(["COMMAND", "GETKEYS", ...line]));
    expect(mine).toEqual(server);
  });

  it("routes shard channels like keys, though GETKEYS leaves them out (not_key)", () => {
    const line = ["SPUBLISH", "chan", "msg"];
    const routing = routingOf(table, line);
    expect(keysOf(routing as NonNullable<typeof routing>, line)).toEqual(["chan"]);
  });
});
