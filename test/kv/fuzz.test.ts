import type http from "node:http";
import { describe, expect, it } from "vitest";
import { rawRequest, runFuzz } from "../harness/fuzz.js";
import { pick, seeded } from "../harness/random.js";
import { command, useGateway } from "./helpers.js";

/**
 * Hostile input with a fixed seed: random methods, paths, headers and bodies (invalid JSON, deep
 * nesting, huge arrays, invalid UTF-8, random bytes, wrong tokens). Every answer must be a
 * non-5xx status with a JSON `{"error"}` or a result, and the gateway must keep serving.
 */
const { stashd } = useGateway(
  {
    kvMaxRequestBytes: 256 * 1024,
    kvMaxCommandsPerRequest: 10_000,
    kvMaxReplyBytes: 64 * 1024,
    kvScriptTimeLimitMs: 50,
    kvCommandTimeoutMs: 2000,
  },
  ["--lua-time-limit", "50"],
);
const SEED = 20261122;
const REQUESTS = 1500;
let lastRequest = "";

/** Issue 11 shapes: commands that would stop a database or hang a pooled connection. */
const HOSTILE = [
  ["SCRIPT", "DEBUG", "SYNC"],
  ["SCRIPT", "DEBUG", "YES"],
  ["EVAL_RO", "while true do end", "0"],
  ["EVAL", "local i = 0 while true do i = i + 1 end", "0"],
  ["CLIENT", "PAUSE", "100000"],
  ["CLIENT", "REPLY", "OFF"],
  ["MONITOR"],
  ["SSUBSCRIBE", "c"],
  ["SAVE"],
  ["MIGRATE", "127.0.0.1", "1", "fz:k", "0", "100"],
  ["SETRANGE", "fz:big", "100000", "x"],
  ["GET", "fz:big"],
  ["LRANGE", "fz:list", "0", "-1"],
];

function hostileBody(rand: () => number): Buffer {
  const one = (): string[] => pick(rand, HOSTILE);
  const n = Math.floor(rand() * 4);
  if (n === 0) return Buffer.from(JSON.stringify(one()));
  if (n === 1) return Buffer.from(`[${'["PING"],'.repeat(10_000)}["PING"]]`);
  // Several slices (read and rendered a slice at a time), hostile items around a boundary.
  if (n === 2) return Buffer.from(JSON.stringify([...Array(1_500).fill(["PING"]), one(), one()]));
  return Buffer.from(JSON.stringify([one(), ["PING"], one()]));
}

function bodyFor(rand: () => number): Buffer {
  const kind = Math.floor(rand() * 10);
  const bytes = (n: number): Buffer =>
    Buffer.from(Array.from({ length: n }, () => Math.floor(rand() * 256)));
  switch (kind) {
    case 0:
      return bytes(Math.floor(rand() * 300));
    case 1:
      return Buffer.from("[".repeat(2000) + "]".repeat(2000));
    case 2:
      return Buffer.from(
        JSON.stringify(Array.from({ length: 5000 }, (_, i) => ["SET", `fz:${i}`, i])),
      );
    case 3:
      return Buffer.concat([Buffer.from('["SET","fz:bin","'), bytes(50), Buffer.from('"]')]);
    case 4:
      return Buffer.from(
        `["${pick(rand, ["GET", "SET", "HSET", "EVAL", "XADD", "ZADD", "DEBUG", "SUBSCRIBE", "CLIENT"])}"${",1".repeat(Math.floor(rand() * 6))}]`,
      );
    case 5:
      return Buffer.from('{"a": [1, 2, {"b": null}]}');
    case 6:
      return Buffer.from(`["SET","fz:k",${"9".repeat(Math.floor(rand() * 400))}]`);
    case 7:
      return Buffer.alloc(300 * 1024, 0x61);
    case 8:
      return hostileBody(rand);
    default:
      return Buffer.from('[["GET","fz:a"],["SET"],[],[1,2,3],"x"]');
  }
}

function pathFor(rand: () => number): string {
  return pick(rand, [
    "/",
    "/pipeline",
    "/multi-exec",
    "/set/fz:p/%FF%FE",
    "/get/%",
    "/%%%/x",
    "//////",
    `/${"a/".repeat(500)}`,
    "/subscribe",
    "/psubscribe/",
    "/echo/x?_token=&_token=zz&a",
    "/incrby/fz:n/99999999999999999999999",
    "/eval/return%20redis.call('ping')/0",
    "/?" + "a=b&".repeat(200),
    "/pipeline",
    "/multi-exec",
    "/script/debug/yes",
    "/get/fz:big",
  ]);
}

function send(
  port: number,
  rand: () => number,
  token: string,
): Promise<{ status: number; body: string }> {
  const body = bodyFor(rand);
  const headers: http.OutgoingHttpHeaders = {
    ...(rand() < 0.01 ? manyHeaders(3000) : {}),
    authorization: pick(rand, [
      `Bearer ${token}`,
      `Bearer ${token}`,
      "Bearer",
      "bearer  x",
      "Basic Zm9v",
      "Bearer \u00ff",
    ]),
    "upstash-encoding": pick(rand, ["base64", "BASE64", "", "utf-8"]),
    "upstash-response-format": pick(rand, ["json", "resp2", "", "xml", "resp3"]),
    "content-type": pick(rand, ["application/json", "text/plain", "multipart/form-data"]),
  };
  const method = pick(rand, ["POST", "POST", "GET", "PUT", "HEAD", "DELETE", "PATCH", "OPTIONS"]);
  const path = pathFor(rand);
  lastRequest = `${method} ${path.slice(0, 40)} ${body.length} ${body.subarray(0, 60).toString("latin1")} ${JSON.stringify(headers).slice(0, 300)}`;
  return rawRequest(port, method, path, headers, body);
}

function manyHeaders(n: number): http.OutgoingHttpHeaders {
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`x-h${i}`, "v"]));
}

describe("hostile input", () => {
  it(`answers ${REQUESTS} seeded random requests without a 5xx and keeps serving`, async () => {
    const rand = seeded(SEED);
    const port = Number(new URL(stashd().kv.url).port);
    const run = await runFuzz(
      "kv",
      REQUESTS,
      () => send(port, rand, stashd().kv.token),
      () => lastRequest,
    );
    expect([...run.statuses.keys()].every((s) => s < 500)).toBe(true);
    expect((await command(stashd(), ["PING"])).body).toEqual({ result: "PONG" });
    expect((await command(stashd(), ["PING"], { token: stashd().kv.readonlyToken })).body).toEqual({
      result: "PONG",
    });
  }, 60_000); // thousands of requests: seconds idle, near 30 s once at load 20
});
