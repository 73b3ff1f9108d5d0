#!/usr/bin/env node
// Makes a checkout ready to run: npm dependencies, redis-server, luacheck, and the build (with
// the web console's assets). `npm start` and `npm test` both run this first, so a fresh Debian
// machine with Node 20 needs nothing else. The slow test tier (`npm run test:slow`) passes
// --with-browser, which also installs Debian's chromium for the console's browser tests, and
// --with-containers, which installs podman, debootstrap and runc for the container image test
// (test/ops/container.test.ts); the everyday tier needs neither. The benches (`npm run bench:kv`,
// `bench:queue`) pass --with-bench, which installs Debian's webdis (the KV anchor) and wrk (the
// load generator; autocannon stands in where it cannot be installed). Plain JavaScript with no
// dependencies, because it runs before `npm ci`.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, statSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { copyLua } from "./copy-lua.mjs";

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

let aptUpdated = false;

/** Installs a Debian package when running as root with apt; false when that is not possible. */
function aptInstall(pkg, binary) {
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (!isRoot || !hasBinary("apt-get")) return false;
  say(`${binary} is missing; installing Debian's ${pkg} package`);
  if (!aptUpdated) run("apt-get", ["update", "-qq"]);
  aptUpdated = true;
  run("apt-get", ["install", "-y", "-qq", "--no-install-recommends", pkg], {
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  return true;
}

// luacheck lints the Lua scripts in `npm run check` (scripts/lint-lua.ts); running stashd does
// not need it, so elsewhere a missing one is only reported.
function ensureLuacheck() {
  if (hasBinary("luacheck") || aptInstall("lua-check", "luacheck")) return;
  say(
    "luacheck (for `npm run check`) was not found on PATH.\n" +
      "  Debian/Ubuntu: sudo apt-get install lua-check\n" +
      "  elsewhere:     luarocks install luacheck",
  );
}

/** The console's browser tests drive Debian's chromium (playwright-core downloads no browser). */
function ensureChromium() {
  const chosen = process.env.CHROMIUM_PATH;
  if (chosen ? existsSync(chosen) : hasBinary("chromium")) return;
  if (!chosen && aptInstall("chromium", "chromium")) return;
  say(
    "chromium was not found; the web console's browser tests need it.\n" +
      "  Debian/Ubuntu: sudo apt-get install chromium\n" +
      "  or set CHROMIUM_PATH to a Chromium/Chrome binary and rerun.",
  );
  process.exit(1);
}

/**
 * The container image test builds the Dockerfile with podman from a base made by debootstrap
 * (scripts/container-build.sh). Where they cannot be installed (not root, no apt) this only says
 * so: that test then reports itself skipped with the reason.
 */
function ensureContainerTools() {
  const tools = [
    ["podman", "podman"],
    ["debootstrap", "debootstrap"],
    ["runc", "runc"],
  ];
  for (const [pkg, binary] of tools) {
    if (hasBinary(binary) || aptInstall(pkg, binary)) continue;
    say(
      `${binary} is not installed and could not be (apt-get install ${pkg}): the container test will be skipped`,
    );
  }
}

/** The benches' anchor and load generator; each is optional there (the bench says what it skips). */
function ensureBenchTools() {
  for (const [pkg, binary] of [
    ["webdis", "webdis"],
    ["wrk", "wrk"],
  ]) {
    if (hasBinary(binary) || aptInstall(pkg, binary)) continue;
    say(
      `${binary} is not installed and could not be (apt-get install ${pkg}): the bench goes without it`,
    );
  }
  ensureSqlite();
}

/**
 * better-sqlite3, the SEARCH bench's anchor (bench/search.ts), in its own folder `bench/.deps`
 * rather than in package.json: offline it compiles SQLite from source (about 3 minutes on 2
 * loaded cores), which `npm start` and the everyday tier should not pay for; the project's own
 * `npm install` would also prune a package installed beside its dependencies.
 */
const SQLITE_PACKAGE = "better-sqlite3@12.11.1";
function ensureSqlite() {
  const dir = path.join(root, "bench", ".deps");
  if (existsSync(path.join(dir, "node_modules", "better-sqlite3", "build", "Release"))) return;
  say(`installing ${SQLITE_PACKAGE} for the SEARCH bench (into bench/.deps)`);
  mkdirSync(dir, { recursive: true });
  if (!existsSync(path.join(dir, "package.json"))) {
    writeFileSync(path.join(dir, "package.json"), '{ "private": true }\n');
  }
  run("npm", ["install", "--no-audit", "--no-fund", "--no-save", SQLITE_PACKAGE], { cwd: dir });
}

function ensureRedis() {
  const chosen = process.env.STASHD_REDIS_SERVER;
  if (chosen) {
    if (hasBinary(chosen)) return;
    say(`STASHD_REDIS_SERVER is ${chosen}, which cannot be run`);
    process.exit(1);
  }
  if (hasBinary("redis-server")) return;
  if (aptInstall("redis-server", "redis-server")) return;
  say(
    "redis-server (Redis >= 7) is required and was not found on PATH.\n" +
      "  Debian/Ubuntu: sudo apt-get install redis-server\n" +
      "  macOS:         brew install redis\n" +
      "  or set STASHD_REDIS_SERVER to a redis-server/valkey-server binary and rerun.",
  );
  process.exit(1);
}

function build() {
  say("building (tsc, console assets)");
  run(process.execPath, [
    path.join(root, "node_modules", "typescript", "bin", "tsc"),
    "-p",
    "tsconfig.build.json",
  ]);
  copyLua(root);
  run(process.execPath, [path.join(root, "scripts", "build-console.mjs")]);
}

checkNode();
installDependencies();
ensureRedis();
ensureLuacheck();
if (process.argv.includes("--with-browser")) ensureChromium();
if (process.argv.includes("--with-containers")) ensureContainerTools();
if (process.argv.includes("--with-bench")) ensureBenchTools();
build();
const redisBin = process.env.STASHD_REDIS_SERVER || "redis-server";
const version = execFileSync(redisBin, ["--version"]).toString().trim().split(" ")[2] ?? "?";
say(`ready (${redisBin} ${version})`);
