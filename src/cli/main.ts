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

/**
 * Runs the command, loading only its own module: loading every command's (the whole server)
 * cost about 0.6 s of CPU on each run, so `--help` or `credentials` waited for `start`'s code.
 */
async function run(inv: Invocation): Promise<number> {
  const [group] = inv.cmd.name.split(" ");
  if (group === "start") return (await import("./start.js")).runStart(inv);
  if (group === "dev") return (await import("./dev.js")).runDev(inv);
  if (group === "credentials") return (await import("./credentials.js")).printCredentials(inv);
  if (group === "db") return (await import("./db.js")).runDb(inv);
  if (group === "cluster") return (await import("./cluster.js")).runCluster(inv);
  return (await import("./queue.js")).runQueue(inv);
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
