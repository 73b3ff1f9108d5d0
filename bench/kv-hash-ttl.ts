/**
 * Cost of the hash-field expiration emulation: `npx tsx bench/kv-hash-ttl.ts [--seconds N]`.
 *
 * One redis-server (Debian's 7.0: no HEXPIRE, so stashd emulates it) and two stashd processes in
 * front of it: one with STASHD_KV_EMULATE_FIELD_TTL=false (hash commands go to Redis natively)
 * and one with the default (every hash command runs as the hash Lua script). Measures HGET and
 * HGETALL of a 10-field hash over HTTP at 1 and 50 connections, on a hash without field TTLs
 * (the cost every user pays) and on one where 5 of its 10 fields have a TTL, and HGETALL of a
 * 1000-field hash; each pair runs three times, interleaved, and the median round is reported.
 * Prints requests/s, p50/p99, emulated/native ratios, and the Redis CPU time per call (`INFO
 * commandstats`), which a busy machine distorts less than HTTP throughput.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { parseRedisUrl } from "../src/shared/redis/connection.js";
import { RedisPool } from "../src/shared/redis/pool.js";
import { freePort, startRedis, stopChild } from "../test/harness/redis.js";
import { startStashdChild } from "./stashd-child.js";

const seconds = Number(process.argv[process.argv.indexOf("--seconds") + 1]) || 3;

interface Sample {
  rps: number;
  p50: number;
  p99: number;
}

async function measure(url: string, token: string, body: string, connections: number) {
  const result = await autocannon({
    url,
    connections,
    duration: seconds,
    method: "POST",
    body,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
  });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${body}: failed requests`);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

/** The sample with the median throughput (robust to one disturbed round on a busy machine). */
function median(samples: Sample[]): Sample {
  const sorted = [...samples].sort((a, b) => a.rps - b.rps);
  return sorted[Math.floor(sorted.length / 2)] as Sample;
}

async function post(url: string, token: string, argv: string[]): Promise<void> {
  const res = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    body: JSON.stringify(argv),
  });
  if (!res.ok) throw new Error(`${argv[0]}: ${await res.text()}`);
}

/** Redis CPU µs per call of `command` since the last CONFIG RESETSTAT. */
async function usecPerCall(pool: RedisPool, command: string): Promise<number> {
  const reply = await pool.exec(["INFO", "commandstats"]);
  const text = reply.kind === "bulk" ? reply.value.toString() : "";
  const match = new RegExp(`cmdstat_${command}:.*usec_per_call=([0-9.]+)`).exec(text);
  return Number(match?.[1] ?? NaN);
}

async function main(): Promise<void> {
  const redis = await startRedis();
  const dirs = [0, 1].map(() => mkdtempSync(path.join(os.tmpdir(), "stashd-bench-hfe-")));
  const ports = [await freePort(), await freePort()];
  const native = await startStashdChild(redis.url, dirs[0] as string, ports[0] as number, {
    STASHD_KV_EMULATE_FIELD_TTL: "false",
  });
  const emulated = await startStashdChild(redis.url, dirs[1] as string, ports[1] as number);
  const nativeUrl = `http://127.0.0.1:${ports[0]}/`;
  const emulatedUrl = `http://127.0.0.1:${ports[1]}/`;
  const admin = new RedisPool(parseRedisUrl(redis.url), {
    size: 1,
    connectTimeoutMs: 2000,
    retryBackoffMs: 20,
  });
  const lines = [
    "| command | hash | conns | native req/s | emulated req/s | ratio | p50 / p99 ms (native → emulated) | Redis µs/call (native → emulated) |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  try {
    const fields = Array.from({ length: 10 }, (_, i) => [`f${i}`, `value-${i}`]).flat();
    await post(emulatedUrl, emulated.token, ["HSET", "bench:plain", ...fields]);
    await post(emulatedUrl, emulated.token, ["HSET", "bench:ttl", ...fields]);
    const many = Array.from({ length: 1000 }, (_, i) => [`f${i}`, `value-${i}`]).flat();
    await post(emulatedUrl, emulated.token, ["HSET", "bench:big", ...many]);
    const withTtl = ["f0", "f1", "f2", "f3", "f4"];
    await post(emulatedUrl, emulated.token, [
      "HEXPIRE",
      "bench:ttl",
      "3600",
      "FIELDS",
      "5",
      ...withTtl,
    ]);
    const cases: [string, string, string][] = [
      ["HGET", "no field TTLs", '["HGET","bench:plain","f7"]'],
      ["HGETALL", "no field TTLs", '["HGETALL","bench:plain"]'],
      ["HGET", "5 of 10 fields with TTLs", '["HGET","bench:ttl","f7"]'],
      ["HGETALL", "5 of 10 fields with TTLs", '["HGETALL","bench:ttl"]'],
      ["HGETALL", "1000 fields, no TTLs", '["HGETALL","bench:big"]'],
    ];
    for (const connections of [1, 50]) {
      for (const [name, hash, body] of cases) {
        const a: Sample[] = [];
        const b: Sample[] = [];
        await admin.exec(["CONFIG", "RESETSTAT"]);
        for (let round = 0; round < 3; round++) {
          // Alternate which one goes first, so a trend in the machine's load favours neither.
          const runNative = async () =>
            a.push(await measure(nativeUrl, native.token, body, connections));
          const runEmulated = async () =>
            b.push(await measure(emulatedUrl, emulated.token, body, connections));
          if (round % 2 === 0) await runNative().then(runEmulated);
          else await runEmulated().then(runNative);
        }
        const cpu = [
          await usecPerCall(admin, name.toLowerCase()),
          await usecPerCall(admin, "evalsha_ro"),
        ];
        const [n, e] = [median(a), median(b)];
        const ms = (s: Sample) => `${s.p50.toFixed(1)} / ${s.p99.toFixed(1)}`;
        lines.push(
          `| ${name} | ${hash} | ${connections} | ${Math.round(n.rps)} | ${Math.round(e.rps)} | ${(e.rps / n.rps).toFixed(2)} | ${ms(n)} → ${ms(e)} | ${cpu[0]} → ${cpu[1]} |`,
        );
        process.stderr.write(`  ${lines[lines.length - 1]}\n`);
      }
    }
  } finally {
    await admin.close();
    await stopChild(native.child);
    await stopChild(emulated.child);
    await redis.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}

await main();
