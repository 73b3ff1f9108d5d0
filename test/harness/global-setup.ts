import { spawnSync } from "node:child_process";

/** Fails fast, with the fix, when the machine has no redis-server (npm test installs it). */
export default function setup(): void {
  const found = spawnSync("redis-server", ["--version"], { encoding: "utf8" });
  if (found.status !== 0) {
    throw new Error(
      "redis-server not found: run `npm run setup` (installs it on Debian as root) or install Redis >= 7",
    );
  }
}
