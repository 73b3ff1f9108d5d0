/**
 * A managed database's memory against one request: `npx tsx bench/kv-copying.ts [--requests N]`.
 *
 * One stashd (in this process, test/harness/stashd.ts) with a managed database of 64 MiB:
 * 1. Overshoot: its redis-server's used_memory and resident memory before and after
 *    - COPY of a set of about 40 MiB (about 45 MiB used);
 *    - `SORT l BY nosort GET big* STORE out`, `l` 100 empty strings and `big` 1 MiB;
 *    - 800 EVALs of distinct 200 KB bodies (the script cache).
 * 2. Cost: N sequential requests (default 2000) of GET, COPY, SUNIONSTORE and ZRANGESTORE of
 *    small keys, three interleaved rounds, median of the per-round p50 / mean in µs; then
 *    Redis's own µs per call (INFO commandstats: the guard's script is `evalsha`).
 * Run it in a copy of another build (`git archive main`) for the figures before a change.
 */
import { readFileSync } from "node:fs";
import { startStashd, type TestStashd } from "../test/harness/stashd.js";

const MIB = 1024 * 1024;
const at = process.argv.indexOf("--requests");
const requests = at > 0 ? Number(process.argv[at + 1]) : 2000;

type Body = { result?: unknown; error?: string };

async function run(s: TestStashd, argv: unknown[]): Promise<[number, Body]> {
  const res = await s.kvFetch("/", { body: JSON.stringify(argv) });
  return [res.status, (await res.json()) as Body];
}

async function memory(s: TestStashd): Promise<{ used: number; rss: number; scripts: number }> {
  const info = String((await run(s, ["INFO", "memory"]))[1].result);
  const server = String((await run(s, ["INFO", "server"]))[1].result);
  const pid = Number(/process_id:(\d+)/.exec(server)?.[1]);
  const pages = Number(readFileSync(`/proc/${pid}/statm`, "latin1").split(" ")[1]);
  const field = (name: string): number => Number(new RegExp(`${name}:(\\d+)`).exec(info)?.[1]);
  return {
    used: field("used_memory"),
    rss: pages * 4096,
    scripts: field("used_memory_scripts_eval"),
  };
}

const mib = (n: number): string => (n / MIB).toFixed(1);

async function overshoot(s: TestStashd): Promise<void> {
  const show = async (label: string, answer?: [number, Body]): Promise<void> => {
    const m = await memory(s);
    const said = answer ? ` -> ${answer[0]} ${(answer[1].error ?? "").slice(0, 60)}` : "";
    console.log(
      `${label.padEnd(34)} used ${mib(m.used)} MiB, rss ${mib(m.rss)} MiB, scripts ${mib(m.scripts)} MiB${said}`,
    );
  };
  const members = 400_000;
  await run(s, [
    "EVAL",
    `for i = 1, ${members}, 1000 do local t = {} for j = i, i + 999 do t[#t + 1] = j .. '${"x".repeat(43)}' end redis.call('SADD', KEYS[1], unpack(t)) end return 1`,
    "1",
    "s",
  ]);
  await show("set of 400k members");
  await show("COPY s s2", await run(s, ["COPY", "s", "s2"]));
  await run(s, ["FLUSHDB"]);
  await run(s, ["SCRIPT", "FLUSH"]);
  await run(s, ["SET", "big", "b".repeat(MIB)]);
  await run(s, ["RPUSH", "l", ...Array.from({ length: 100 }, () => "")]);
  await show("1 MiB string, 100-element list");
  await show(
    "SORT l BY nosort GET big* STORE out",
    await run(s, ["SORT", "l", "BY", "nosort", "GET", "big*", "STORE", "out"]),
  );
  await run(s, ["FLUSHDB"]);
  const pad = `-- ${"c".repeat(200_000)}\n`;
  let last: [number, Body] | undefined;
  for (let i = 0; i < 800; i++) last = await run(s, ["EVAL", `${pad}return ${i}`, "0"]);
  await show("800 EVALs of distinct 200 KB bodies", last);
  await run(s, ["SCRIPT", "FLUSH"]);
  await run(s, ["FLUSHDB"]);
}

async function latencies(s: TestStashd, argv: unknown[]): Promise<{ p50: number; mean: number }> {
  const body = JSON.stringify(argv);
  const times: number[] = [];
  for (let i = 0; i < requests; i++) {
    const t = performance.now();
    const res = await s.kvFetch("/", { body });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${body}: ${res.status}`);
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  return { p50: (times[Math.floor(times.length / 2)] ?? 0) * 1000, mean: mean * 1000 };
}

async function cost(s: TestStashd): Promise<void> {
  await run(s, ["SET", "k", "v"]);
  await run(s, ["SADD", "a", "1", "2", "3"]);
  await run(s, ["SADD", "b", "3", "4"]);
  await run(s, ["ZADD", "z", "1", "x", "2", "y"]);
  const cases: [string, unknown[]][] = [
    ["GET", ["GET", "k"]],
    ["COPY", ["COPY", "a", "a2", "REPLACE"]],
    ["SUNIONSTORE", ["SUNIONSTORE", "u", "a", "b"]],
    ["ZRANGESTORE", ["ZRANGESTORE", "zr", "z", "0", "-1"]],
  ];
  const rounds = new Map<string, { p50: number; mean: number }[]>();
  for (let round = 0; round < 3; round++) {
    for (const [name, argv] of cases) {
      const list = rounds.get(name) ?? [];
      list.push(await latencies(s, argv));
      rounds.set(name, list);
    }
  }
  const median = (xs: number[]): number => xs.sort((a, b) => a - b)[1] ?? 0;
  for (const [name, list] of rounds) {
    const p50 = median(list.map((r) => r.p50));
    const mean = median(list.map((r) => r.mean));
    console.log(`${name.padEnd(12)} p50 ${p50.toFixed(0)} µs, mean ${mean.toFixed(0)} µs`);
  }
  // Redis's own time per call: the guard's script (evalsha) against the commands run natively.
  const stats = String((await run(s, ["INFO", "commandstats"]))[1].result);
  for (const name of ["get", "copy", "sunionstore", "zrangestore", "evalsha", "eval"]) {
    const line = new RegExp(`^cmdstat_${name}:calls=(\\d+),usec=\\d+,usec_per_call=([\\d.]+)`, "m");
    const m = line.exec(stats);
    if (m) console.log(`redis ${name.padEnd(12)} calls ${m[1]}, ${m[2]} µs per call`);
  }
}

const stashd = await startStashd({ services: ["kv"], kvMaxDataBytes: 64 * MIB });
try {
  await overshoot(stashd);
  await cost(stashd);
} finally {
  await stashd.stop();
}
