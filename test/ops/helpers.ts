import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import path from "node:path";
import { eventually } from "../harness/eventually.js";

export const BIN = path.resolve("bin/stashd");

/** One sample of a metric from /metrics text (labels matched exactly); undefined if absent. */
export async function metric(
  adminUrl: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const want = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(",");
  const prefix = want === "" ? `${name} ` : `${name}{${want}} `;
  const line = text.split("\n").find((l) => l.startsWith(prefix));
  return line === undefined ? undefined : Number(line.slice(prefix.length));
}

/** Value of a counter, 0 when no sample with those labels exists yet. */
export async function counter(
  adminUrl: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  return (await metric(adminUrl, name, labels)) ?? 0;
}

/** Pids of processes whose command line mentions `text` (the test's own data dir). */
export function processesMentioning(text: string): string[] {
  const r = spawnSync("pgrep", ["-f", text], { encoding: "utf8" });
  return r.stdout.split("\n").filter((l) => l.trim() !== "");
}

export { redisServersIn } from "../harness/process.js";

export interface Spawned {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** `bin/stashd ARGS` as a user runs it, its stdout and stderr collected. */
export function spawnStashd(args: string[], env: NodeJS.ProcessEnv = {}): Spawned {
  return spawnCollecting(process.execPath, [BIN, ...args], env);
}

export function spawnCollecting(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd?: string,
): Spawned {
  const child = spawn(cmd, args, { env, cwd, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
  return { child, output: () => out, exited };
}

/** Waits until the spawned stashd printed its banner; returns the output so far. */
export function untilRunning(s: Spawned, timeoutMs = 30_000): Promise<string> {
  return eventually(
    () => {
      if (!s.output().includes("stashd is running")) throw new Error(`not running:\n${s.output()}`);
      return s.output();
    },
    { timeoutMs, intervalMs: 50 },
  );
}

/** `http://…` URL printed after `label` in the banner. */
export function bannerUrl(output: string, label: string): string {
  const line = output.split("\n").find((l) => l.includes(label)) ?? "";
  const m = /http:\/\/\S+/.exec(line);
  if (!m) throw new Error(`no ${label} URL in:\n${output}`);
  return m[0];
}
