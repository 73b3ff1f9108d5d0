import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, runStashd, spawnStashd } from "../harness/process.js";
import { eventually } from "../harness/eventually.js";
import { stopChild } from "../harness/redis.js";

/** The real `bin/stashd` (built by `npm test`'s setup step) as a user runs it. */
let dataDir: string;
let server: ChildProcess;
let logs = "";

/**
 * `bin/stashd ARGS --data-dir` of the running server. Each run is a Node start (about half a CPU
 * second), so invocations that do not depend on each other run together.
 */
function cli(...args: string[]) {
  return runStashd([...args, "--data-dir", dataDir]);
}

interface Creds {
  running: boolean;
  kv: {
    url: string;
    databases: { name: string; url: string; token: string; readonlyToken: string }[];
  };
}

async function credentials(): Promise<Creds> {
  return JSON.parse((await cli("credentials", "--json")).stdout) as Creds;
}

async function call(
  url: string,
  token: string,
  argv: unknown[],
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    body: JSON.stringify(argv),
  });
  return { status: res.status, body: await res.json() };
}

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-cli-"));
  server = spawnStashd(dataDir, {
    env: { STASHD_REGISTRY_POLL_MS: "20" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  server.stderr?.on("data", (d: Buffer) => (logs += d.toString()));
  // The banner first, then `credentials`: asking it over and over would take CPU from the start.
  await eventually(() => expect(logs).toContain("stashd is running"), { timeoutMs: 20_000 });
  await eventually(async () => expect((await credentials()).running).toBe(true));
});

afterAll(async () => {
  if (server.exitCode === null) {
    server.kill("SIGKILL");
  }
  rmSync(dataDir, { recursive: true, force: true });
});

describe("stashd CLI", () => {
  it("logs the bound URL and prints it with the tokens in .env and JSON form", async () => {
    const [creds, envForm] = await Promise.all([credentials(), cli("credentials")]);
    const port = new URL(creds.kv.url).port;
    expect(port).not.toBe("0");
    await eventually(() => expect(logs).toContain(creds.kv.url));
    const env = envForm.stdout;
    const db = creds.kv.databases[0];
    expect(env).toContain(`UPSTASH_REDIS_REST_URL=${creds.kv.url}`);
    expect(env).toContain(`UPSTASH_REDIS_REST_TOKEN=${db?.token}`);
    expect(env).toContain(`UPSTASH_REDIS_REST_READONLY_TOKEN=${db?.readonlyToken}`);
    expect(await call(creds.kv.url, db?.token ?? "", ["PING"])).toEqual({
      status: 200,
      body: { result: "PONG" },
    });
  });

  it("creates, lists, resets and deletes databases while running", async () => {
    // A refused name writes nothing, so it runs beside the first create; the second create, the
    // list and the credentials only read the registry the first one wrote.
    const [created, badName] = await Promise.all([
      cli("db", "create", "shop"),
      cli("db", "create", "bad name!"),
    ]);
    expect(created.status).toBe(0);
    expect(badName.status).toBe(1);
    const [again, list, creds] = await Promise.all([
      cli("db", "create", "shop"),
      cli("db", "list"),
      credentials(),
    ]);
    expect(again.stderr).toContain("already exists");
    expect(list.stdout).toMatch(/^shop\tmanaged\t/m);
    const shop = creds.kv.databases.find((d) => d.name === "shop");
    const url = creds.kv.url;
    await eventually(
      async () => expect((await call(url, shop?.token ?? "", ["SET", "a", "1"])).status).toBe(200),
      {
        timeoutMs: 10_000,
      },
    );
    expect((await cli("db", "reset-password", "shop")).status).toBe(0);
    const fresh = (await credentials()).kv.databases.find((d) => d.name === "shop");
    // Each worker polls the registry on its own, so the three answers are awaited together: a
    // request may reach a worker that has not polled yet.
    await eventually(async () => {
      expect((await call(url, shop?.token ?? "", ["GET", "a"])).status).toBe(401);
      expect((await call(url, shop?.readonlyToken ?? "", ["GET", "a"])).status).toBe(401);
      expect(await call(url, fresh?.token ?? "", ["GET", "a"])).toEqual({
        status: 200,
        body: { result: "1" },
      });
    });
    expect((await cli("db", "delete", "shop")).status).toBe(0);
    await eventually(async () =>
      expect((await call(url, fresh?.token ?? "", ["GET", "a"])).status).toBe(401),
    );
    expect(existsSync(path.join(dataDir, "kv", "redis", "shop"))).toBe(false);
  });

  it("updates a running database's settings: a full database evicts once --eviction is on", async () => {
    expect(
      (await cli("db", "create", "cache", "--max-data-size", String(4 * 1024 * 1024))).status,
    ).toBe(0);
    const token = (await credentials()).kv.databases.find((d) => d.name === "cache")?.token ?? "";
    const url = (await credentials()).kv.url;
    await eventually(async () => expect((await call(url, token, ["PING"])).status).toBe(200), {
      timeoutMs: 10_000,
    });
    const value = "v".repeat(256 * 1024);
    let refused = 0;
    for (let i = 0; i < 40 && refused === 0; i++) {
      const { status } = await call(url, token, ["SET", `k${i}`, value]);
      if (status === 507) refused = i;
    }
    expect(refused).toBeGreaterThan(0);

    const updated = await cli("db", "update", "cache", "--eviction", "on");
    expect(updated.stdout).toContain("updated database cache: max-data-size=4194304 eviction=on");
    // Every worker applies it on its own poll: the same write, until each accepts it.
    await eventually(async () => {
      for (let i = 0; i < 4; i++) {
        expect((await call(url, token, ["SET", `more${i}`, value])).status).toBe(200);
      }
    });
    expect((await cli("db", "list")).stdout).toMatch(
      /^cache\tmanaged\t\S+\tmax-data-size=4194304 eviction=on$/m,
    );
    const bad = await cli("db", "update", "cache", "--eviction", "maybe");
    expect([bad.status, bad.stderr]).toEqual([
      1,
      expect.stringContaining("expected on, off or default"),
    ]);
    expect((await cli("db", "delete", "cache")).status).toBe(0);
  });

  it("refuses a database with an invalid Redis URL before writing it", async () => {
    const r = await cli("db", "create", "broken", "--redis-url", "http://nope");
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("unsupported Redis URL scheme");
    expect((await cli("db", "list")).stdout).not.toContain("broken");
  });

  it("fails clearly when the port is taken, leaving no redis-server behind", async () => {
    const taken = new URL((await credentials()).kv.url).port;
    const other = mkdtempSync(path.join(os.tmpdir(), "stashd-cli-busy-"));
    try {
      const r = await runStashd(["start", "--data-dir", other, "--kv-port", taken], {
        timeoutMs: 20_000,
      });
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`cannot listen on 127.0.0.1:${taken} (in use`);
      const left = spawnSync("pgrep", ["-f", other], { encoding: "utf8" });
      expect(left.stdout.trim()).toBe("");
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it("starts with the default relative data dir, as `npm start` does", async () => {
    const cwd = mkdtempSync(path.join(os.tmpdir(), "stashd-cli-cwd-"));
    const child = spawn(
      process.execPath,
      [BIN, "start", "--kv-port", "0", "--queue-port", "0", "--admin-port", "0"],
      {
        cwd,
        env: {},
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    let err = "";
    child.stderr?.on("data", (d: Buffer) => (err += d.toString()));
    try {
      await eventually(() => expect(err).toContain("stashd is running"), { timeoutMs: 20_000 });
      expect(existsSync(path.join(cwd, ".stashd", "kv", "redis", "default", "redis.log"))).toBe(
        true,
      );
    } finally {
      await stopChild(child);
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  it("rejects unknown commands and options with usage", async () => {
    const r = await cli("frobnicate");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("Usage:");
  });

  it("shuts down cleanly on SIGTERM, stopping its managed redis-server", async () => {
    const exited = new Promise<number | null>((resolve) =>
      server.once("exit", (code) => resolve(code)),
    );
    server.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect((await credentials()).running).toBe(false);
    const redisProcs = spawnSync("pgrep", ["-f", path.join(dataDir, "kv", "redis")], {
      encoding: "utf8",
    });
    expect(redisProcs.stdout.trim()).toBe("");
  });
});
