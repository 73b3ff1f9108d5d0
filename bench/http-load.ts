/**
 * HTTP load generation for the benches: wrk when it is installed (a C load generator with
 * threads: it costs the machine far less than a Node one, and reports latency in microseconds),
 * autocannon otherwise (its percentiles are whole milliseconds, so sub-ms goals read as 0 or 1).
 * Smoke runs send a few requests with fetch instead. Either way a run that saw a non-2xx answer or a socket error throws: a bench never reports the
 * speed of error responses.
 */
import { spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import autocannon from "autocannon";

export interface LoadSpec {
  url: string;
  connections: number;
  seconds: number;
  method?: string;
  body?: string;
  /** Instead of `body`: bodies sent in turn (e.g. commands on keys of every cluster slot range). */
  bodies?: string[];
  headers?: Record<string, string>;
  /** Instead of `seconds`: send exactly this many requests with fetch (smoke runs). */
  requests?: number;
}

export interface LoadResult {
  rps: number;
  /** Requests answered in the run (those still in flight when it ended are not counted). */
  requests: number;
  /** Latency percentiles in milliseconds. */
  p50: number;
  p99: number;
}

export function hasWrk(): boolean {
  return spawnSync("sh", ["-c", "command -v wrk"]).status === 0;
}

/** Runs one load; with `dir` (a scratch directory for wrk's script) and wrk installed, by wrk. */
export async function runLoad(spec: LoadSpec, dir?: string): Promise<LoadResult> {
  if (spec.requests !== undefined) return runFetches(spec, spec.requests);
  if (dir !== undefined && hasWrk()) return runWrk(spec, dir);
  return runAutocannon(spec);
}

/** `count` requests over `connections` concurrent loops: a quick check that a scenario works. */
async function runFetches(spec: LoadSpec, count: number): Promise<LoadResult> {
  const started = performance.now();
  const times: number[] = [];
  const loop = async (): Promise<void> => {
    while (times.length < count) {
      const t = performance.now();
      const init = { method: spec.method ?? "POST", headers: spec.headers ?? {} };
      const body = spec.bodies?.[times.length % spec.bodies.length] ?? spec.body;
      const res = await fetch(spec.url, body === undefined ? init : { ...init, body });
      await res.arrayBuffer();
      if (res.status >= 300) throw new Error(`${spec.url}: status ${res.status}`);
      times.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: spec.connections }, loop));
  times.sort((a, b) => a - b);
  const at = (q: number): number =>
    times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? NaN;
  return {
    rps: (times.length * 1000) / (performance.now() - started),
    requests: times.length,
    p50: at(0.5),
    p99: at(0.99),
  };
}

async function runAutocannon(spec: LoadSpec): Promise<LoadResult> {
  const result = await autocannon({
    url: spec.url,
    connections: spec.connections,
    duration: spec.seconds,
    method: (spec.method ?? "POST") as "POST",
    body: spec.body,
    headers: spec.headers,
    ...(spec.bodies ? { requests: spec.bodies.map((body) => ({ body })) } : {}),
  });
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${spec.url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  const { requests, latency } = result;
  return { rps: requests.average, requests: requests.total, p50: latency.p50, p99: latency.p99 };
}

let scripts = 0;

async function runWrk(spec: LoadSpec, dir: string): Promise<LoadResult> {
  const script = path.join(dir, `wrk-${++scripts}.lua`);
  writeFileSync(script, wrkScript(spec));
  const threads = String(Math.min(2, spec.connections));
  const args = ["-t", threads, "-c", String(spec.connections), "-d", `${spec.seconds}s`];
  // wrk counts an answer slower than its timeout (2 s by default) as a socket error: on a loaded
  // machine a queue publish can take that long, and the run would be thrown away.
  args.push("--timeout", "10s", "--latency", "-s", script, spec.url);
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn("wrk", args, { stdio: ["ignore", "pipe", "inherit"] });
    let text = "";
    child.stdout.on("data", (d: Buffer) => (text += d.toString()));
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0 ? resolve(text) : reject(new Error(`wrk exited ${code}`)),
    );
  });
  return parseWrk(out, spec.url);
}

/** wrk's Lua setup for one request shape; values are in long brackets, so quotes stay as sent. */
function wrkScript(spec: LoadSpec): string {
  const lua = (s: string): string => `[==[${s}]==]`;
  const lines = [`wrk.method = ${lua(spec.method ?? "POST")}`];
  if (spec.body !== undefined) lines.push(`wrk.body = ${lua(spec.body)}`);
  for (const [k, v] of Object.entries(spec.headers ?? {}))
    lines.push(`wrk.headers[ ${lua(k)} ] = ${lua(v)}`);
  if (spec.bodies) {
    // Each wrk thread walks the bodies in turn, from a different start.
    lines.push(`local bodies = { ${spec.bodies.map(lua).join(", ")} }`);
    lines.push("local next = math.random(#bodies)");
    lines.push("request = function()");
    lines.push("  next = next % #bodies + 1");
    lines.push("  return wrk.format(nil, nil, nil, bodies[next])");
    lines.push("end");
  }
  return `${lines.join("\n")}\n`;
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

/** Requests/s and latency percentiles from `wrk --latency` output; throws on errors in it. */
export function parseWrk(out: string, what: string): LoadResult {
  const failures = /Non-2xx or 3xx responses:\s*(\d+)/.exec(out);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const errors = socket ? socket.slice(1).reduce((n, x) => n + Number(x), 0) : 0;
  if (failures || errors > 0) {
    const kinds = socket?.[0] ?? "";
    throw new Error(`${what}: ${failures?.[1] ?? 0} non-2xx, ${errors} socket errors (${kinds})`);
  }
  const rps = /Requests\/sec:\s*([\d.]+)/.exec(out);
  if (!rps) throw new Error(`${what}: no Requests/sec in wrk output:\n${out}`);
  const percentile = (p: number): number => {
    const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, "m").exec(out);
    return m ? Number(m[1]) * (UNIT_MS[m[2] ?? "ms"] ?? 1) : NaN;
  };
  const answered = /(\d+) requests in /.exec(out);
  const requests = Number(answered?.[1] ?? NaN);
  return { rps: Number(rps[1]), requests, p50: percentile(50), p99: percentile(99) };
}
