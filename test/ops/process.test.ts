import { execFileSync, spawnSync } from "node:child_process";
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { bannerUrl, processesMentioning, spawnCollecting, untilRunning } from "./helpers.js";

/**
 * stashd through npm, as users start it: `npm start` in the checkout and `npx stashd start` from
 * the packed tarball installed elsewhere. SIGTERM to npm must leave nothing running.
 */
const ROOT = path.resolve(".");
const PORTS = ["--kv-port", "0", "--queue-port", "0", "--admin-port", "0"];
const dirs: string[] = [];
/** Both run in a copy, so their builds never rewrite the dist/ other test files are running. */
let clone: string;

beforeAll(() => {
  clone = freshClone();
});

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const d = mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/** The checkout's tracked files in a fresh directory (node_modules linked): like a clone. */
function freshClone(): string {
  const dir = tempDir("stashd-clone-");
  const files = execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" })
    .split("\0")
    .filter((f) => f !== "");
  for (const f of files) {
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    // Timestamps kept: setup then sees node_modules as up to date and installs nothing.
    cpSync(path.join(ROOT, f), path.join(dir, f), { preserveTimestamps: true });
  }
  symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"));
  return dir;
}

async function terminatesCleanly(npmPid: number, exited: Promise<unknown>, dataDir: string) {
  process.kill(npmPid, "SIGTERM");
  await exited;
  await eventually(() => expect(processesMentioning(dataDir)).toEqual([]), { timeoutMs: 10_000 });
}

describe("through npm", () => {
  it("`npm start` forwards SIGTERM: stashd and its redis-servers stop", async () => {
    const dataDir = tempDir("stashd-npm-start-");
    const npm = spawnCollecting(
      "npm",
      ["start", "--", "--data-dir", dataDir, ...PORTS],
      { ...process.env, STASHD_LOG_FORMAT: "json" },
      clone,
    );
    await untilRunning(npm, 120_000);
    expect(processesMentioning(dataDir).length).toBeGreaterThanOrEqual(3);
    await terminatesCleanly(npm.child.pid ?? 0, npm.exited, dataDir);
    expect(npm.output()).toContain('"msg":"stopped"');
  }, 180_000);

  it("`npm pack` ships dist/; the installed package runs with `npx stashd start` and stops with npx", async () => {
    const packDir = tempDir("stashd-pack-");
    const pack = spawnSync("npm", ["pack", "--pack-destination", packDir], {
      cwd: clone,
      encoding: "utf8",
    });
    expect(pack.status).toBe(0);
    const tarball = readdirSync(packDir).find((f) => f.endsWith(".tgz")) ?? "";
    const listing = execFileSync("tar", ["tzf", path.join(packDir, tarball)], { encoding: "utf8" });
    expect(listing).toContain("package/dist/cli/main.js");
    expect(listing).toContain("package/dist/index.d.ts");
    const app = tempDir("stashd-app-");
    writeFileSync(
      path.join(app, "package.json"),
      '{"name":"app","version":"1.0.0","private":true}',
    );
    const install = spawnSync(
      "npm",
      ["install", "--prefer-offline", "--no-audit", "--no-fund", path.join(packDir, tarball)],
      { cwd: app, encoding: "utf8" },
    );
    expect(install.status, install.stderr).toBe(0);
    const dataDir = tempDir("stashd-npx-");
    const npx = spawnCollecting(
      "npx",
      ["stashd", "start", "--data-dir", dataDir, ...PORTS],
      {
        ...process.env,
        STASHD_LOG_FORMAT: "json",
      },
      app, // npx finds the package installed there
    );
    const out = await untilRunning(npx, 60_000);
    const admin = bannerUrl(out, "admin");
    expect((await fetch(`${admin}/healthz`)).status).toBe(200);
    await terminatesCleanly(npx.child.pid ?? 0, npx.exited, dataDir);
  }, 240_000);
});
