#!/usr/bin/env node
// `npm start`: setup (scripts/setup.mjs), then `stashd start` with the arguments given after
// `--`. One node process stays between npm and stashd: it forwards SIGINT, SIGTERM and SIGHUP
// to stashd and exits with stashd's code, and stashd also stops when this launcher disappears
// (its IPC channel closes), so stopping `npm start` never leaves stashd or redis-servers behind.
import { spawn, spawnSync } from "node:child_process";
import { constants } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const setup = spawnSync(process.execPath, [path.join(root, "scripts", "setup.mjs")], {
  stdio: "inherit",
});
if (setup.status !== 0) process.exit(setup.status ?? 1);

const child = spawn(
  process.execPath,
  [path.join(root, "bin", "stashd"), "start", ...process.argv.slice(2)],
  { stdio: ["inherit", "inherit", "inherit", "ipc"] },
);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("exit", (code, signal) => {
  process.exit(code ?? 128 + (signal ? constants.signals[signal] : 1));
});
