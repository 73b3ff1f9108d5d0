/**
 * KV gateway benchmark: `npm run bench:kv [-- --seconds N]`.
 *
 * In one run on this machine, against one redis-server started here:
 * - floor: a bare node:http server answering a fixed JSON reply (the HTTP layer's ceiling);
 * - stashd: GET and SET in the JSON-body form at 1 and 50 connections, `/pipeline` of 100 GETs;
 * - webdis (Debian's package, a C server doing the same job), when installed: GET and SET;
 * - direct RESP: redis-benchmark against the same Redis (1 and 50 clients, and -P 100).
 * - JSON (--json-only runs just this): JSON.SET / JSON.GET of a 1 KB document (stashd's Lua
 *   scripts on a Redis without the JSON module) beside SET / GET of the same bytes.
 * stashd and the floor run as child processes so the load generator does not share their event
 * loop. Prints requests/s, commands/s, p50/p99 latency and the stashd/direct and stashd/webdis ratios.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { freePort, startRedis, stopChild } from "../test/harness/redis.js";
import { startStashdChild, waitForHttp } from "./stashd-child.js";

interface Row {
  name: string;
  connections: number;
  rps: number;
  commandsPerSec: number;
  p50: number;
  p99: number;
}

const seconds = Number(process.argv[process.argv.indexOf("--seconds") + 1]) || 5;
const rows: Row[] = [];
const jsonOnly = process.argv.includes("--json-only");

async function load(
  name: string,
  url: string,
  connections: number,
  init: { method?: string; body?: string; headers?: Record<string, string> },
  commandsPerRequest = 1,
): Promise<Row> {
  const result = await autocannon({
    url,
    connections,
    duration: seconds,
    method: (init.method ?? "POST") as "POST",
    body: init.body,
    headers: init.headers,
  });
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  const row = {
    name,
    connections,
    rps: result.requests.average,
    commandsPerSec: result.requests.average * commandsPerRequest,
    p50: result.latency.p50,
    p99: result.latency.p99,
  };
  rows.push(row);
  process.stderr.write(`  ${name} c=${connections}: ${Math.round(row.rps)} req/s\n`);
  return row;
}

function redisBenchmark(
  port: number,
  password: string | undefined,
  clients: number,
  pipeline: number,
): Row[] {
  const args = [
    "-p",
    String(port),
    "-c",
    String(clients),
    "-P",
    String(pipeline),
    "-t",
    "get,set",
    "-n",
    String(clients * pipeline * 2000),
    "--csv",
  ];
  if (password) args.push("-a", password);
  const out = spawnSync("redis-benchmark", args, { encoding: "utf8" }).stdout;
  return out
    .split("\n")
    .filter((l) => /^"(GET|SET)"/.test(l))
    .map((l) => {
      const cols = l.split(",").map((c) => c.replace(/"/g, ""));
      const rps = Number(cols[1]);
      return {
        name: `direct RESP ${cols[0]}${pipeline > 1 ? ` -P ${pipeline}` : ""}`,
        connections: clients,
        rps: rps / pipeline,
        commandsPerSec: rps,
        p50: Number(cols[4]),
        p99: Number(cols[6]),
      };
    });
}

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

async function main(): Promise<void> {
  const redis = await startRedis();
  const dir = mkdtempSync(path.join(os.tmpdir(), "stashd-bench-"));
  const [floorPort, stashdPort, webdisPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const floor = floorServer(floorPort);
  const stashd = await startStashdChild(redis.url, dir, stashdPort);
  const webdis = startWebdis(redis.port, webdisPort, dir);
  const auth = { authorization: `Bearer ${stashd.token}`, "content-type": "application/json" };
  const url = `http://127.0.0.1:${stashdPort}`;
  try {
    await waitForHttp(`http://127.0.0.1:${floorPort}/`);
    await fetch(`${url}/`, { method: "POST", headers: auth, body: '["SET","bench:k","v"]' });
    const pipelineBody = JSON.stringify(Array.from({ length: 100 }, () => ["GET", "bench:k"]));
    for (const c of jsonOnly ? [] : [1, 50]) {
      await load("floor node:http fixed reply", `http://127.0.0.1:${floorPort}/`, c, {
        body: "[]",
      });
      await load("stashd SET (JSON body)", `${url}/`, c, {
        body: '["SET","bench:k","v"]',
        headers: auth,
      });
      await load("stashd GET (JSON body)", `${url}/`, c, {
        body: '["GET","bench:k"]',
        headers: auth,
      });
      await load(
        "stashd /pipeline 100 GET",
        `${url}/pipeline`,
        c,
        { body: pipelineBody, headers: auth },
        100,
      );
      if (webdis) {
        await waitForHttp(`http://127.0.0.1:${webdisPort}/PING`);
        await load("webdis SET", `http://127.0.0.1:${webdisPort}/SET/bench:k/v`, c, {
          method: "GET",
        });
        await load("webdis GET", `http://127.0.0.1:${webdisPort}/GET/bench:k`, c, {
          method: "GET",
        });
      }
      rows.push(...redisBenchmark(redis.port, undefined, c, 1));
    }
    if (!jsonOnly) {
      rows.push(
        ...redisBenchmark(redis.port, undefined, 1, 100),
        ...redisBenchmark(redis.port, undefined, 50, 100),
      );
    }
    await benchJson(url, auth);
    report();
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

// ---- JSON group: JSON.SET / JSON.GET of a 1 KB document vs SET / GET of the same bytes ----

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

async function benchJson(url: string, auth: Record<string, string>): Promise<void> {
  const doc = jsonDocument();
  const body = (argv: string[]): string => JSON.stringify(argv);
  await fetch(`${url}/`, { method: "POST", headers: auth, body: body(["SET", "bench:s", doc]) });
  await fetch(`${url}/`, {
    method: "POST",
    headers: auth,
    body: body(["JSON.SET", "bench:j", "$", doc]),
  });
  for (const c of [1, 50]) {
    const run = (name: string, argv: string[]): Promise<Row> =>
      load(name, `${url}/`, c, { body: body(argv), headers: auth });
    await run("stashd SET 1 KB", ["SET", "bench:s", doc]);
    await run("stashd JSON.SET 1 KB", ["JSON.SET", "bench:j", "$", doc]);
    await run("stashd GET 1 KB", ["GET", "bench:s"]);
    await run("stashd JSON.GET 1 KB", ["JSON.GET", "bench:j"]);
  }
}

function report(): void {
  const find = (name: string, c: number): Row | undefined =>
    rows.find((r) => r.name === name && r.connections === c);
  const lines = [
    `# bench/kv: ${new Date().toISOString()} on ${os.cpus().length}x ${os.cpus()[0]?.model ?? "cpu"}, node ${process.version}, ${seconds}s per run`,
    "",
    "| scenario | conns | req/s | commands/s | p50 ms | p99 ms |",
    "|---|---|---|---|---|---|",
  ];
  for (const r of rows)
    lines.push(
      `| ${r.name} | ${r.connections} | ${Math.round(r.rps)} | ${Math.round(r.commandsPerSec)} | ${r.p50} | ${r.p99} |`,
    );
  lines.push("", "| ratio | value |", "|---|---|");
  const ratio = (
    label: string,
    a: Row | undefined,
    b: Row | undefined,
    field: "rps" | "commandsPerSec" = "rps",
  ): void => {
    if (a && b) lines.push(`| ${label} | ${(a[field] / b[field]).toFixed(2)} |`);
  };
  for (const c of [1, 50]) {
    ratio(
      `stashd GET / direct GET, c=${c}`,
      find("stashd GET (JSON body)", c),
      find("direct RESP GET", c),
    );
    ratio(
      `stashd GET / webdis GET, c=${c}`,
      find("stashd GET (JSON body)", c),
      find("webdis GET", c),
    );
    ratio(
      `stashd SET / webdis SET, c=${c}`,
      find("stashd SET (JSON body)", c),
      find("webdis SET", c),
    );
    ratio(
      `stashd GET / floor, c=${c}`,
      find("stashd GET (JSON body)", c),
      find("floor node:http fixed reply", c),
    );
    ratio(
      `stashd /pipeline cmds / direct -P 100 cmds, c=${c}`,
      find("stashd /pipeline 100 GET", c),
      find("direct RESP GET -P 100", c),
      "commandsPerSec",
    );
  }
  for (const c of [1, 50]) {
    ratio(
      `JSON.SET / SET (1 KB), c=${c}`,
      find("stashd JSON.SET 1 KB", c),
      find("stashd SET 1 KB", c),
    );
    ratio(
      `JSON.GET / GET (1 KB), c=${c}`,
      find("stashd JSON.GET 1 KB", c),
      find("stashd GET 1 KB", c),
    );
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}

await main();
