import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { loadConfig, type FlagValues } from "../config/load.js";
import type { Config } from "../config/schema.js";
import { AppError, messageOf } from "../shared/errors.js";
import {
  commandHelp,
  findCommand,
  groupUsage,
  parseOptions,
  usage,
  type CommandSpec,
} from "./commands.js";
import { runCluster } from "./cluster.js";
import { printCredentials } from "./credentials.js";
import { runDb } from "./db.js";
import { runDev } from "./dev.js";
import { runQueue } from "./queue.js";
import { runStart } from "./start.js";

/** What a command gets: its options as typed, positionals after the command words, config. */
export interface Invocation {
  cmd: CommandSpec;
  values: Record<string, string | boolean | undefined>;
  args: string[];
  flags: FlagValues;
  /** The configuration with this command's setting options applied. */
  config(): Config;
}

/** Entry point of `bin/stashd`; returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  const first = argv[0];
  if (first === "--version" || first === "-v" || first === "version") {
    process.stdout.write(`stashd ${version()}\n`);
    return 0;
  }
  if (first === undefined || first === "help" || first === "--help" || first === "-h") {
    process.stdout.write(usage());
    return 0;
  }
  // The command's words come first: `stashd db create NAME --redis-url …`.
  const words = argv.slice(0, 2).filter((a) => !a.startsWith("-"));
  const cmd = findCommand(words);
  if (!cmd && first !== undefined && groupUsage(first)) {
    process.stderr.write(`stashd: usage: ${groupUsage(first)}\n`);
    return 1;
  }
  if (!cmd) {
    process.stderr.write(
      `stashd: unknown command ${JSON.stringify(words.join(" "))}\n\n${usage()}`,
    );
    return 2;
  }
  let inv: Invocation;
  try {
    inv = invocation(cmd, argv);
  } catch (err) {
    process.stderr.write(`stashd ${cmd.name}: ${messageOf(err)}\n\n${commandHelp(cmd)}`);
    return 2;
  }
  if (inv.values.help) {
    process.stdout.write(commandHelp(cmd));
    return 0;
  }
  try {
    return await run(inv);
  } catch (err) {
    process.stderr.write(`stashd: ${messageOf(err)}\n`);
    return 1;
  }
}

function run(inv: Invocation): Promise<number> | number {
  const [group] = inv.cmd.name.split(" ");
  if (group === "start") return runStart(inv);
  if (group === "dev") return runDev(inv);
  if (group === "credentials") return printCredentials(inv);
  if (group === "db") return runDb(inv);
  if (group === "cluster") return runCluster(inv);
  return runQueue(inv);
}

function invocation(cmd: CommandSpec, argv: string[]): Invocation {
  const { values, positionals } = parseArgs({
    args: argv,
    options: parseOptions(cmd),
    allowPositionals: true,
    strict: true,
  });
  const args = positionals.slice(cmd.name.split(" ").length);
  const expected = cmd.args === "" ? 0 : cmd.args.split(" ").length;
  if (!values.help && args.length !== expected) {
    throw new AppError(
      "bad_request",
      expected === 0 ? `unexpected argument ${JSON.stringify(args[0])}` : `expected ${cmd.args}`,
    );
  }
  const flags: FlagValues = {};
  for (const o of cmd.options) {
    const v = values[o.flag];
    if (o.setting && typeof v === "string") flags[o.setting] = v;
  }
  // Validated now, so a bad number fails before anything runs (with the variable's message).
  const config = loadConfig({}, process.env, flags);
  return { cmd, values, args, flags, config: () => config };
}

/** The package's version, from the package.json next to dist/ (or src/ under tsx). */
export function version(): string {
  const file = new URL("../../package.json", import.meta.url);
  return (JSON.parse(readFileSync(file, "utf8")) as { version: string }).version;
}
