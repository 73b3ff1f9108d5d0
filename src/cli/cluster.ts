import { rmSync } from "node:fs";
import path from "node:path";
import { AppError } from "../shared/errors.js";
import { startLocalCluster } from "../shared/redis/cluster/local.js";
import type { CommandSpec, OptionSpec } from "./commands.js";
import type { Invocation } from "./main.js";

const DEFAULT_BASE_PORT = 7000;

const BASE_PORT: OptionSpec = {
  flag: "base-port",
  type: "string",
  arg: "PORT",
  doc: `First of the six node ports (each also uses its port + 10000 for the cluster bus). Default ${DEFAULT_BASE_PORT}.`,
};

export const CLUSTER_UP: CommandSpec = {
  name: "cluster up",
  args: "",
  summary: "Run a local Redis Cluster (3 masters, 3 replicas) for development (docs/scaling.md).",
  options: [
    BASE_PORT,
    {
      flag: "data-dir",
      type: "string",
      arg: "DIR",
      doc: "The nodes' files go to DIR/cluster.",
      setting: "dataDir",
    },
  ],
};

/**
 * `stashd cluster up`: a scratch Redis Cluster for development — 3 masters and 3 replicas on
 * ports BASE…BASE+5, files under `<data dir>/cluster`, wiped at every start (persistence is off).
 * Runs until SIGINT or SIGTERM, then stops the nodes.
 */
export async function runCluster(inv: Invocation): Promise<number> {
  const raw = inv.values["base-port"];
  const basePort = typeof raw === "string" ? Number(raw) : DEFAULT_BASE_PORT;
  if (!Number.isInteger(basePort) || basePort < 1 || basePort > 55_529) {
    throw new AppError("bad_request", "--base-port must be a port number up to 55529");
  }
  const config = inv.config();
  const dir = path.resolve(config.dataDir, "cluster");
  rmSync(dir, { recursive: true, force: true });
  const cluster = await startLocalCluster({ dir, basePort, bin: config.redisServerBin });
  process.stderr.write(
    `Redis Cluster is up: 3 masters (ports ${basePort}-${basePort + 2}), 3 replicas (${basePort + 3}-${basePort + 5})\n` +
      `  use it:  stashd db create NAME --redis-url ${cluster.url}\n` +
      `  stop with Ctrl-C\n`,
  );
  await new Promise<void>((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
  await cluster.stop();
  return 0;
}
