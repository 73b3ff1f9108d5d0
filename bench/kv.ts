/**
 * KV gateway benchmark: `npm run bench:kv [-- --seconds N --repeat N --smoke --json-only
 * --soak SECONDS --cpu-prof DIR]`.
 *
 * In one run on this machine, against one redis-server started here, each scenario `--repeat`
 * times (default 3, interleaved) and reported as medians:
 * - floor: a bare node:http server answering a fixed JSON reply (the HTTP layer's ceiling);
 * - stashd: GET and SET in the JSON-body and the path form at 1 and 50 connections, `/pipeline`
 *   of 10 and 100 GETs, `/multi-exec` of 10 GETs;
 * - webdis (a C server doing the same job), when installed: GET and SET;
 * - direct RESP: redis-benchmark against the same Redis (1 and 50 clients, and -P 100);
 * - JSON group (skipped by --smoke; --json-only runs just this): JSON.SET / JSON.GET of a 1 KB
 *   document (stashd's Lua scripts on a Redis without the JSON module) beside SET / GET; --no-json
 *   leaves it out (for short repeats of the goals' scenarios).
 * Then the goals of docs/benchmarks.md, each beside its anchor from the same run, and stashd's
 * resident memory (idle, peak under load, after). `--soak SECONDS` instead cycles through the
 * stashd scenarios at 50 connections for that long and prints the memory after each round.
 * Every scenario first runs unrecorded for `--warm SECONDS` (default 1), so stashd's JIT has
 * compiled its hot paths before anything is measured.
 * `--smoke` runs every scenario briefly once (no speed is asserted: it keeps the script working).
 * `--stashd PATH` measures another build's launcher (bin/stashd of a copy made before a change).
 * `--cpu-prof DIR` makes the stashd child write a V8 CPU profile there when it stops.
 * stashd, webdis and the floor run as child processes; the load generator is wrk when installed
 * (bench/http-load.ts), otherwise autocannon.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, startRedis, stopChild } from "../test/harness/redis.js";
import { hasWrk, runLoad, type LoadSpec } from "./http-load.js";
import { startStashdChild, waitForHttp } from "./stashd-child.js";

interface Row {
  name: string;
  connections: number;
  rps: number;
  commandsPerSec: number;
  p50: number;
  p99: number;
}

interface Scenario {
  name: string;
  connections: number;
  spec: Omit<LoadSpec, "connections" | "seconds">;
  commandsPerRequest: number;
  /** Measured on the stashd child, so its memory is sampled meanwhile. */
  stashd: boolean;
}

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const smoke = process.argv.includes("--smoke");
const jsonOnly = process.argv.includes("--json-only");
const noJson = process.argv.includes("--no-json");
const seconds = Number(flag("--seconds")) || 5;
const repeat = smoke ? 1 : Number(flag("--repeat")) || 3;
/** `--warm SECONDS` (default 1; 0 for none): each scenario's unrecorded warm-up run. */
const warmSeconds = flag("--warm") === undefined ? 1 : Number(flag("--warm"));
const soakSeconds = Number(flag("--soak")) || 0;
const cpuProfDir = flag("--cpu-prof");
const CONNECTIONS = smoke ? [1, 4] : [1, 50];
/** Another build's launcher (`--stashd /path/bin/stashd`), to measure before and after a change. */
const stashdBin = flag("--stashd") ?? "bin/stashd";

// ---- processes ----

function floorServer(port: number): ChildProcess {
  const code = `require("node:http").createServer((q,s)=>{q.resume();q.on("end",()=>{s.writeHead(200,{"content-type":"application/json"});s.end('{"result":"OK"}')})}).listen(${port},"127.0.0.1")`;
  return spawn(process.execPath, ["-e", code], { stdio: "ignore" });
}

function startWebdis(redisPort: number, port: number, dir: string): ChildProcess | undefined {
  if (spawnSync("sh", ["-c", "command -v webdis"]).status !== 0) {
    process.stderr.write(
      "  webdis not installed (apt-get install webdis): skipping that comparison\n",
    );
    return undefined;
  }
  const conf = path.join(dir, "webdis.json");
  writeFileSync(
    conf,
    JSON.stringify({
      redis_host: "127.0.0.1",
      redis_port: redisPort,
      http_host: "127.0.0.1",
      http_port: port,
      threads: 2,
      pool_size: 20,
      daemonize: false,
      database: 0,
      verbosity: 0,
      logfile: path.join(dir, "webdis.log"),
    }),
  );
  return spawn("webdis", [conf], { stdio: "ignore" });
}

/** Resident memory of a process in MB (Linux /proc), or NaN where that is not readable. */
function rssMb(pid: number | undefined): number {
  const file = `/proc/${pid ?? 0}/status`;
  if (!existsSync(file)) return NaN;
  const m = /VmRSS:\s*(\d+) kB/.exec(readFileSync(file, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
}

class MemoryWatch {
  peak = 0;
  private timer: NodeJS.Timeout | undefined;
  constructor(private readonly pid: number | undefined) {}
  get now(): number {
    return rssMb(this.pid);
  }
  start(): void {
    this.timer ??= setInterval(() => (this.peak = Math.max(this.peak, this.now)), 250);
  }
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}

// ---- measuring ----

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

/**
 * Runs every scenario once for `warmSeconds`, unrecorded: stashd's JIT compiles its hot paths
 * during the first seconds of load, which made the first measured scenarios of a run come out
 * low against the C servers beside them (all servers get the same warm-up).
 */
async function warmUp(scenarios: Scenario[], dir: string): Promise<void> {
  if (smoke || warmSeconds <= 0) return;
  for (const s of scenarios) {
    await runLoad({ ...s.spec, connections: s.connections, seconds: warmSeconds }, dir);
  }
}

async function measure(scenarios: Scenario[], dir: string, memory: MemoryWatch): Promise<Row[]> {
  const runs = new Map<Scenario, { rps: number; p50: number; p99: number }[]>();
  await warmUp(scenarios, dir);
  for (let round = 0; round < repeat; round++) {
    for (const s of scenarios) {
      if (s.stashd) memory.start();
      const spec = { ...s.spec, connections: s.connections, seconds };
      const result = await runLoad(smoke ? { ...spec, requests: 20 } : spec, dir);
      memory.stop();
      runs.set(s, [...(runs.get(s) ?? []), result]);
      process.stderr.write(`  ${s.name} c=${s.connections}: ${Math.round(result.rps)} req/s\n`);
    }
  }
  return scenarios.map((s) => {
    const r = runs.get(s) ?? [];
    const rps = median(r.map((x) => x.rps));
    return {
      name: s.name,
      connections: s.connections,
      rps,
      commandsPerSec: rps * s.commandsPerRequest,
      p50: median(r.map((x) => x.p50)),
      p99: median(r.map((x) => x.p99)),
    };
  });
}

function redisBenchmark(port: number, clients: number, pipeline: number): Row[] {
  const requests = smoke ? pipeline * 100 : clients * pipeline * 2000;
  const args = ["-p", String(port), "-c", String(clients), "-P", String(pipeline)];
  args.push("-t", "get,set", "-n", String(requests), "--csv");
  const runs = Array.from(
    { length: repeat },
    () => spawnSync("redis-benchmark", args, { encoding: "utf8" }).stdout,
  );
  const rowsOf = (out: string): Row[] =>
    out
      .split("\n")
      .filter((l) => /^"(GET|SET)"/.test(l))
      .map((l) => {
        const cols = l.split(",").map((c) => c.replace(/"/g, ""));
        const cmds = Number(cols[1]);
        return {
          name: `direct RESP ${cols[0]}${pipeline > 1 ? ` -P ${pipeline}` : ""}`,
          connections: clients,
          rps: cmds / pipeline,
          commandsPerSec: cmds,
          p50: Number(cols[4]),
          p99: Number(cols[6]),
        };
      });
  const all = runs.map(rowsOf);
  return (all[0] ?? []).map((row, i) => {
    const same = all.map((rows) => rows[i] ?? row);
    const pick = (f: (r: Row) => number): number => median(same.map(f));
    return {
      ...row,
      rps: pick((r) => r.rps),
      commandsPerSec: pick((r) => r.commandsPerSec),
      p50: pick((r) => r.p50),
      p99: pick((r) => r.p99),
    };
  });
}

// ---- scenarios ----

type Shape = Omit<LoadSpec, "connections" | "seconds" | "url">;

function kvScenarios(
  at: { floor: string; stashd: string; webdis: string | undefined },
  auth: Record<string, string>,
): Scenario[] {
  const stashdUrl = at.stashd;
  const gets = (n: number): string =>
    JSON.stringify(Array.from({ length: n }, () => ["GET", "bench:k"]));
  const post = (body: string): Shape => ({ method: "POST", body, headers: auth });
  const get = { method: "GET", headers: auth };
  const list: Scenario[] = [];
  const add = (name: string, url: string, spec: Shape, n = 1, stashd = true): void => {
    for (const c of CONNECTIONS)
      list.push({ name, connections: c, spec: { url, ...spec }, commandsPerRequest: n, stashd });
  };
  add("floor node:http fixed reply", at.floor, { method: "POST", body: "[]" }, 1, false);
  add("stashd GET (JSON body)", `${stashdUrl}/`, post('["GET","bench:k"]'));
  add("stashd GET (path)", `${stashdUrl}/get/bench:k`, get);
  add("stashd SET (JSON body)", `${stashdUrl}/`, post('["SET","bench:k","v"]'));
  add("stashd SET (path)", `${stashdUrl}/set/bench:k/v`, get);
  add("stashd /pipeline 10 GET", `${stashdUrl}/pipeline`, post(gets(10)), 10);
  add("stashd /multi-exec 10 GET", `${stashdUrl}/multi-exec`, post(gets(10)), 10);
  add("stashd /pipeline 100 GET", `${stashdUrl}/pipeline`, post(gets(100)), 100);
  const webdis = at.webdis;
  if (webdis) {
    add("webdis GET", `${webdis}/GET/bench:k`, { method: "GET" }, 1, false);
    add("webdis SET", `${webdis}/SET/bench:k/v`, { method: "GET" }, 1, false);
  }
  return list;
}

/** A deterministic JSON document of about 1 KB (nested objects, arrays, numbers, strings). */
function jsonDocument(): string {
  const items = Array.from({ length: 8 }, (_, i) => ({
    id: i,
    name: `item-${i}`,
    price: 10.5 + i,
    tags: ["a", "b", "c"],
    active: i % 2 === 0,
  }));
  const doc = { user: { id: 42, name: "bench", email: "bench@example.com" }, items, note: "" };
  doc.note = "x".repeat(Math.max(0, 1024 - JSON.stringify(doc).length));
  return JSON.stringify(doc);
}

/** JSON.SET / JSON.GET of a 1 KB document vs SET / GET of the same bytes. */
async function jsonScenarios(url: string, auth: Record<string, string>): Promise<Scenario[]> {
  const doc = jsonDocument();
  const send = (argv: string[]): Promise<Response> =>
    fetch(`${url}/`, { method: "POST", headers: auth, body: JSON.stringify(argv) });
  await send(["SET", "bench:s", doc]);
  await send(["JSON.SET", "bench:j", "$", doc]);
  const list: Scenario[] = [];
  for (const c of CONNECTIONS) {
    const add = (name: string, argv: string[]): void => {
      const spec = { url: `${url}/`, method: "POST", body: JSON.stringify(argv), headers: auth };
      list.push({ name, connections: c, spec, commandsPerRequest: 1, stashd: true });
    };
    add("stashd SET 1 KB", ["SET", "bench:s", doc]);
    add("stashd JSON.SET 1 KB", ["JSON.SET", "bench:j", "$", doc]);
    add("stashd GET 1 KB", ["GET", "bench:s"]);
    add("stashd JSON.GET 1 KB", ["JSON.GET", "bench:j"]);
  }
  return list;
}

// ---- report ----

interface Memory {
  idle: number;
  peak: number;
  after: number;
  soak: number[];
}

function report(rows: Row[], memory: Memory, load: string): void {
  const generator = smoke ? "fetch (smoke)" : hasWrk() ? "wrk" : "autocannon";
  const cpu = `${os.cpus().length}x ${os.cpus()[0]?.model ?? "cpu"}`;
  const lines = [
    `# bench/kv: ${new Date().toISOString()} on ${cpu}, node ${process.version}`,
    `# ${smoke ? "smoke run" : `${seconds}s per run, median of ${repeat}`}, load generator ${generator}, load average ${load}`,
    "",
    "| scenario | conns | req/s | commands/s | p50 ms | p99 ms |",
    "|---|---|---|---|---|---|",
  ];
  const f = (x: number): string => (Number.isFinite(x) ? String(Math.round(x * 1000) / 1000) : "-");
  for (const r of rows)
    lines.push(
      `| ${r.name} | ${r.connections} | ${Math.round(r.rps)} | ${Math.round(r.commandsPerSec)} | ${f(r.p50)} | ${f(r.p99)} |`,
    );
  if (rows.length > 0) lines.push("", ...goalLines(rows));
  lines.push("", ...memoryLines(memory));
  process.stdout.write(`${lines.join("\n")}\n`);
}

function goalLines(rows: Row[]): string[] {
  const find = (name: string, c: number): Row | undefined =>
    rows.find((r) => r.name === name && r.connections === c);
  const [one, many] = CONNECTIONS as [number, number];
  const lines = [
    "| goal | stashd | anchor | anchor value | ratio | target |",
    "|---|---|---|---|---|---|",
  ];
  const row = (
    goal: string,
    a: Row | undefined,
    anchorName: string,
    b: Row | undefined,
    value: (r: Row) => number,
    target: string,
    invert = false,
  ): void => {
    if (!a) return;
    const av = value(a);
    const bv = b ? value(b) : NaN;
    const ratio = bv > 0 && av > 0 ? (invert ? bv / av : av / bv).toFixed(2) : "n/a";
    const n = (x: number): string =>
      Number.isNaN(x) ? "n/a" : x >= 100 ? String(Math.round(x)) : x.toFixed(3);
    lines.push(`| ${goal} | ${n(av)} | ${anchorName} | ${n(bv)} | ${ratio} | ${target} |`);
  };
  for (const cmd of ["GET", "SET"]) {
    const webdis = find(`webdis ${cmd}`, many);
    for (const form of ["JSON body", "path"]) {
      const s = find(`stashd ${cmd} (${form})`, many);
      row(
        `${cmd} ${form} req/s, c=${many}`,
        s,
        `webdis ${cmd}`,
        webdis,
        (r) => r.rps,
        ">= 0.8 (aim 1.0)",
      );
    }
  }
  for (const cmd of ["GET", "SET"]) {
    const webdis = find(`webdis ${cmd}`, one);
    for (const form of ["JSON body", "path"]) {
      const s = find(`stashd ${cmd} (${form})`, one);
      row(
        `${cmd} ${form} p50 ms, c=${one}`,
        s,
        `webdis ${cmd}`,
        webdis,
        (r) => r.p50,
        "stashd <= 0.1 ms",
        true,
      );
    }
  }
  for (const c of CONNECTIONS) {
    row(
      `/pipeline 100 commands/s, c=${c}`,
      find("stashd /pipeline 100 GET", c),
      "redis-benchmark GET -P 100",
      find("direct RESP GET -P 100", c),
      (r) => r.commandsPerSec,
      ">= 0.5",
    );
  }
  for (const c of CONNECTIONS) {
    row(
      `/multi-exec 10 cost (1/req/s), c=${c}`,
      find("stashd /multi-exec 10 GET", c),
      "/pipeline 10",
      find("stashd /pipeline 10 GET", c),
      (r) => r.rps,
      "cost ratio <= 1.5",
      true,
    );
  }
  for (const c of CONNECTIONS) {
    row(
      `GET JSON body / floor, c=${c}`,
      find("stashd GET (JSON body)", c),
      "floor node:http",
      find("floor node:http fixed reply", c),
      (r) => r.rps,
      "(context)",
    );
  }
  return lines;
}

function memoryLines(m: Memory): string[] {
  const mb = (x: number): string => (Number.isNaN(x) ? "n/a" : `${x.toFixed(1)} MB`);
  const lines = [
    `stashd RSS: idle ${mb(m.idle)}, peak under load ${mb(m.peak)}, after the runs ${mb(m.after)}`,
  ];
  if (m.soak.length > 0) lines.push(`soak RSS after each round: ${m.soak.map(mb).join(", ")}`);
  return lines;
}

// ---- main ----

/** `--soak`: the stashd scenarios at the higher connection count in turn, 5 s each, for
 * `soakSeconds`; stashd's resident memory after each round. */
async function soak(scenarios: Scenario[], dir: string, memory: MemoryWatch): Promise<number[]> {
  const samples: number[] = [memory.now];
  const cycle = scenarios.filter((s) => s.stashd && s.connections > 1);
  const started = performance.now();
  while (performance.now() - started < soakSeconds * 1000) {
    for (const s of cycle)
      await runLoad({ ...s.spec, connections: s.connections, seconds: 5 }, dir);
    samples.push(memory.now);
    const elapsed = Math.round((performance.now() - started) / 1000);
    process.stderr.write(`  soak ${elapsed}s: ${samples.at(-1)?.toFixed(1)} MB\n`);
  }
  return samples;
}

async function main(): Promise<void> {
  const redis = await startRedis();
  const dir = mkdtempSync(path.join(os.tmpdir(), "stashd-bench-"));
  const [floorPort, stashdPort, webdisPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const floor = floorServer(floorPort);
  const stashd = await startStashdChild(
    redis.url,
    dir,
    stashdPort,
    {},
    {
      bin: stashdBin,
      nodeFlags: cpuProfDir ? ["--cpu-prof", "--cpu-prof-dir", cpuProfDir] : [],
    },
  );
  const webdis = jsonOnly ? undefined : startWebdis(redis.port, webdisPort, dir);
  const auth = { authorization: `Bearer ${stashd.token}`, "content-type": "application/json" };
  const url = `http://127.0.0.1:${stashdPort}`;
  const memory = new MemoryWatch(stashd.child.pid);
  try {
    const load = os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(" ");
    await waitForHttp(`http://127.0.0.1:${floorPort}/`);
    if (webdis) await waitForHttp(`http://127.0.0.1:${webdisPort}/PING`);
    await fetch(`${url}/`, { method: "POST", headers: auth, body: '["SET","bench:k","v"]' });
    const idle = memory.now;
    const scenarios = jsonOnly
      ? []
      : kvScenarios(
          {
            floor: `http://127.0.0.1:${floorPort}/`,
            stashd: url,
            webdis: webdis ? `http://127.0.0.1:${webdisPort}` : undefined,
          },
          auth,
        );
    if (!smoke && !noJson) scenarios.push(...(await jsonScenarios(url, auth)));
    if (soakSeconds > 0) {
      const samples = await soak(scenarios, dir, memory);
      report([], { idle, peak: NaN, after: memory.now, soak: samples }, load);
      return;
    }
    const rows = await measure(scenarios, dir, memory);
    if (!jsonOnly) {
      for (const c of CONNECTIONS) rows.push(...redisBenchmark(redis.port, c, 1));
      for (const c of CONNECTIONS) rows.push(...redisBenchmark(redis.port, c, 100));
    }
    report(rows, { idle, peak: memory.peak, after: memory.now, soak: [] }, load);
  } finally {
    await Promise.all([
      stopChild(stashd.child),
      stopChild(floor),
      webdis ? stopChild(webdis) : undefined,
    ]);
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
