#!/usr/bin/env node
// Makes a checkout ready to run: npm dependencies, redis-server, and the TypeScript build.
// `npm start` and `npm test` both run this first, so a fresh Debian machine with Node 20 needs
// nothing else. Plain JavaScript with no dependencies, because it runs before `npm ci`.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, statSync, utimesSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const say = (msg) => process.stderr.write(`setup: ${msg}\n`);

function run(cmd, args, opts = {}) {
  const result = spawnSync(cmd, args, {
    cwd: root,
    stdio: ["ignore", "inherit", "inherit"],
    ...opts,
  });
  if (result.status !== 0) {
    say(`\`${cmd} ${args.join(" ")}\` failed (exit ${result.status ?? result.signal})`);
    process.exit(1);
  }
}

function checkNode() {
  const major = Number(process.versions.node.split(".")[0]);
  if (major < 20) {
    say(`Node.js >= 20 is required, this is ${process.version}`);
    process.exit(1);
  }
}

function installDependencies() {
  const marker = path.join(root, "node_modules", ".package-lock.json");
  const inputs = ["package.json", "package-lock.json"].map(
    (f) => statSync(path.join(root, f)).mtimeMs,
  );
  if (existsSync(marker) && statSync(marker).mtimeMs >= Math.max(...inputs)) return;
  // `npm install` rather than `npm ci`: with npm 11, `npm ci` rejects lock files that leave out
  // other platforms' optional packages (rollup's), which `npm install` itself writes that way.
  // It installs the locked versions all the same.
  say("installing npm dependencies");
  run("npm", ["install", "--no-audit", "--no-fund"]);
  const now = new Date();
  utimesSync(marker, now, now);
}

function hasBinary(name) {
  return spawnSync("sh", ["-c", 'command -v "$1"', "sh", name], { stdio: "ignore" }).status === 0;
}

function ensureRedis() {
  const chosen = process.env.STASHD_REDIS_SERVER;
  if (chosen) {
    if (hasBinary(chosen)) return;
    say(`STASHD_REDIS_SERVER is ${chosen}, which cannot be run`);
    process.exit(1);
  }
  if (hasBinary("redis-server")) return;
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (isRoot && hasBinary("apt-get")) {
    say("redis-server is missing; installing Debian's redis-server package");
    run("apt-get", ["update", "-qq"]);
    run("apt-get", ["install", "-y", "-qq", "--no-install-recommends", "redis-server"], {
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    });
    return;
  }
  say(
    "redis-server (Redis >= 7) is required and was not found on PATH.\n" +
      "  Debian/Ubuntu: sudo apt-get install redis-server\n" +
      "  macOS:         brew install redis\n" +
      "  or set STASHD_REDIS_SERVER to a redis-server/valkey-server binary and rerun.",
  );
  process.exit(1);
}

function build() {
  say("building (tsc)");
  run(process.execPath, [
    path.join(root, "node_modules", "typescript", "bin", "tsc"),
    "-p",
    "tsconfig.build.json",
  ]);
}

checkNode();
installDependencies();
ensureRedis();
build();
const redisBin = process.env.STASHD_REDIS_SERVER || "redis-server";
const version = execFileSync(redisBin, ["--version"]).toString().trim().split(" ")[2] ?? "?";
say(`ready (${redisBin} ${version})`);
