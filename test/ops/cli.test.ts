import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COMMANDS } from "../../src/cli/commands.js";
import { runStashd } from "../harness/process.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { startStashd } from "../harness/stashd.js";

/** The CLI as a user meets it: version, help, validation, confirmations, credentials. */
let dataDir: string;
let redis: TestRedis;

/** `bin/stashd ARGS`; invocations that do not depend on each other run together. */
const cli = (args: string[], env: NodeJS.ProcessEnv = {}) => runStashd(args, { env });

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-ops-cli-"));
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("stashd CLI", () => {
  it("prints its version", async () => {
    const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { version: string };
    expect(await cli(["--version"])).toMatchObject({
      status: 0,
      stdout: `stashd ${pkg.version}\n`,
    });
  });

  it("describes every option of every command in COMMAND --help", async () => {
    const helps = await Promise.all(COMMANDS.map((cmd) => cli([...cmd.name.split(" "), "--help"])));
    const helpOf = new Map<string, string>();
    COMMANDS.forEach((cmd, i) => {
      const r = helps[i];
      expect(r?.status).toBe(0);
      expect(r?.stdout).toContain(`Usage: stashd ${cmd.name}`);
      for (const o of cmd.options) expect(r?.stdout).toMatch(new RegExp(`--${o.flag}\\b.* \\S`));
      helpOf.set(cmd.name, r?.stdout ?? "");
    });
    expect(helpOf.get("start")).toBeDefined();
    expect(helpOf.get("start")).not.toEqual(helpOf.get("db create"));
  });

  it("validates numbers with the same message as the environment variable", async () => {
    // Each is refused before it touches the data dir, so the three run together.
    const [flag, env, size] = await Promise.all([
      cli(["start", "--kv-port", "abc", "--data-dir", dataDir]),
      cli(["start", "--data-dir", dataDir], { STASHD_KV_PORT: "abc" }),
      cli(["db", "create", "x", "--max-request-size", "1e3"]),
    ]);
    expect(flag.status).toBe(2);
    expect(flag.stderr).toContain(
      'option --kv-port is "abc", expected a whole number from 0 to 65535',
    );
    expect(env.status).toBe(2);
    expect(env.stderr).toContain(
      'variable STASHD_KV_PORT is "abc", expected a whole number from 0 to 65535',
    );
    expect(size.stderr).toContain('option --max-request-size is "1e3", expected a whole number');
  });

  it("fails a fatal start error at once, with a non-zero code", async () => {
    const started = Date.now();
    const r = await cli(["start", "--data-dir", dataDir, "--kv-port", "0", "--queue-port", "0"], {
      STASHD_REDIS_SERVER: "/nope/redis",
      STASHD_ADMIN: "false",
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("cannot run /nope/redis");
    // A start that missed the spawn error would wait for the server's readiness, 15 s
    // (READY_TIMEOUT_MS in src/shared/redis/managed.ts); the run itself takes about 0.7 s of
    // CPU, and 5-8 s of wall time on a loaded 2-core machine.
    expect(Date.now() - started).toBeLessThan(12_000);
  });

  it("tries --redis-url before saving it, unless --no-check", async () => {
    const dead = "redis://127.0.0.1:1";
    const refused = await cli(["db", "create", "ext", "--redis-url", dead, "--data-dir", dataDir]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain("ECONNREFUSED");
    expect((await cli(["db", "list", "--data-dir", dataDir])).stdout).not.toContain("ext");
    const live = await cli([
      "db",
      "create",
      "ext",
      "--redis-url",
      redis.url,
      "--data-dir",
      dataDir,
    ]);
    expect(live.status).toBe(0);
    const unchecked = ["db", "create", "later", "--redis-url", dead, "--no-check"];
    expect((await cli([...unchecked, "--data-dir", dataDir])).status).toBe(0);
  });

  it("asks for --force to delete `default`; credentials never show another database's tokens as default's; start recreates it", async () => {
    const s = await startStashd({ dataDir });
    const oldToken = s.kv.token;
    await s.stopKeepingData();
    // Both are refused without writing, so they run together.
    const [refused, reset] = await Promise.all([
      cli(["db", "delete", "default", "--data-dir", dataDir]),
      cli(["db", "reset-password", "default", "--data-dir", dataDir]),
    ]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain("--force");
    expect(reset.status).toBe(1);
    expect((await cli(["db", "delete", "default", "--force", "--data-dir", dataDir])).status).toBe(
      0,
    );
    const env = (await cli(["credentials", "--data-dir", dataDir])).stdout;
    expect(env).not.toMatch(/^UPSTASH_REDIS_REST_TOKEN=/m);
    expect(env).toMatch(/^# UPSTASH_REDIS_REST_TOKEN=/m);
    expect(env).toContain("the default database was deleted");
    const again = await startStashd({ dataDir });
    try {
      expect(again.kv.databases().map((d) => d.name)).toContain("default");
      expect(again.kv.token).not.toBe(oldToken);
      const lines = (await cli(["credentials", "--data-dir", dataDir])).stdout;
      expect(lines).toContain(`UPSTASH_REDIS_REST_TOKEN=${again.kv.token}\n`);
    } finally {
      await again.stopKeepingData();
    }
  });
});
