import { flagName } from "../config/load.js";
import { SETTINGS, type SettingName } from "../config/schema.js";
import { CLUSTER_UP } from "./cluster.js";

/**
 * The CLI's commands and options, the single source for parsing and for `--help`. An option
 * backed by a setting takes its description and validation from the config schema, so
 * `--kv-port abc` fails with the same message as `STASHD_KV_PORT=abc`.
 */
export interface OptionSpec {
  flag: string;
  type: "string" | "boolean";
  /** Placeholder in usage lines (string options). */
  arg?: string;
  doc: string;
  setting?: SettingName;
}

export interface CommandSpec {
  /** `db create`, `start`… */
  name: string;
  /** Positional arguments as shown in usage. */
  args: string;
  summary: string;
  options: OptionSpec[];
}

function setting(name: SettingName, arg: string): OptionSpec {
  const spec = SETTINGS[name];
  const def = spec.default === undefined ? "" : ` Default ${String(spec.default)}.`;
  return {
    flag: flagName(name),
    type: "string",
    arg,
    doc: `${spec.doc}${def} (${spec.env})`,
    setting: name,
  };
}

const DATA_DIR = setting("dataDir", "DIR");

/** An option of `db update`: a value, or `default` for the server-wide setting. */
function updateOption(flag: string, arg: string, doc: string): OptionSpec {
  return { flag, type: "string", arg, doc: `${doc} \`default\`: the server-wide setting.` };
}
const JSON_OUT: OptionSpec = { flag: "json", type: "boolean", doc: "Print JSON instead of text." };
const FORCE: OptionSpec = {
  flag: "force",
  type: "boolean",
  doc: "Required to do this to the `default` database (its clients lose access or data).",
};

export const COMMANDS: CommandSpec[] = [
  {
    name: "start",
    args: "",
    summary: "Run the Redis REST gateway, the message queue and the admin listener.",
    options: [
      setting("host", "HOST"),
      setting("kvPort", "PORT"),
      setting("queuePort", "PORT"),
      setting("adminHost", "HOST"),
      setting("adminPort", "PORT"),
      DATA_DIR,
      setting("workers", "N"),
      setting("logLevel", "LEVEL"),
      setting("logFormat", "FORMAT"),
    ],
  },
  {
    name: "dev",
    args: "",
    summary:
      "Stand in for the QStash dev server: apps with QSTASH_DEV=true use it with no other setting.",
    options: [
      setting("qstashDevPort", "PORT"),
      setting("kvPort", "PORT"),
      setting("adminPort", "PORT"),
      {
        flag: "data-dir",
        type: "string",
        arg: "DIR",
        doc: "Directory for dev state. Default ./.stashd-dev (STASHD_DATA_DIR is not read, so dev state stays apart from `stashd start`'s).",
      },
      {
        flag: "fresh",
        type: "boolean",
        doc: "Start with empty queue and KV stores (tokens kept), as the vendor dev server does on every start.",
      },
      setting("logLevel", "LEVEL"),
      setting("logFormat", "FORMAT"),
    ],
  },
  {
    name: "credentials",
    args: "",
    summary: "Print the URLs and tokens as .env lines (the `default` database's as the main ones).",
    options: [
      DATA_DIR,
      setting("host", "HOST"),
      setting("kvPort", "PORT"),
      setting("queuePort", "PORT"),
      JSON_OUT,
    ],
  },
  {
    name: "db create",
    args: "NAME",
    summary: "Add a database: managed (its own redis-server) or on an external Redis.",
    options: [
      {
        flag: "redis-url",
        type: "string",
        arg: "URL",
        doc: "External Redis (redis://, rediss://, unix://); stashd connects once to check it.",
      },
      {
        flag: "no-check",
        type: "boolean",
        doc: "Save --redis-url without trying to connect (a Redis that is not up yet).",
      },
      {
        flag: "max-request-size",
        type: "string",
        arg: "BYTES",
        doc: "Largest request body for this database (default STASHD_KV_MAX_REQUEST_BYTES).",
      },
      {
        flag: "max-data-size",
        type: "string",
        arg: "BYTES",
        doc: "Managed database: most memory its data may use, then writes are refused (default STASHD_KV_MAX_DATA_BYTES: half the machine's memory).",
      },
      {
        flag: "daily-request-limit",
        type: "string",
        arg: "N",
        doc: "Commands per UTC day and process, 0 = off (default STASHD_KV_DAILY_REQUEST_LIMIT).",
      },
      {
        flag: "script-time-limit",
        type: "string",
        arg: "MS",
        doc: "Longest a Lua script or function may run before it is killed (default STASHD_KV_SCRIPT_TIME_LIMIT_MS).",
      },
      {
        flag: "allow-migrate",
        type: "boolean",
        doc: "Let the standard token run MIGRATE (it makes the Redis connect to another host).",
      },
      {
        flag: "eviction",
        type: "boolean",
        doc: "Managed database used as a cache: at its max data size evict the least recently used keys (any key) instead of refusing writes.",
      },
      {
        flag: "stop-unkillable-scripts",
        type: "boolean",
        doc: "External Redis: let stashd stop it (SHUTDOWN NOSAVE) when a script that wrote runs past the time limit and cannot be killed; its supervisor must restart it. Managed databases always do.",
      },
      DATA_DIR,
    ],
  },
  {
    name: "db update",
    args: "NAME",
    summary:
      "Change a database's settings; running servers apply them. Each takes `default` to go back to the server-wide setting.",
    options: [
      updateOption("max-request-size", "BYTES", "Largest request body for this database."),
      updateOption(
        "max-data-size",
        "BYTES",
        "Managed database: most memory its data may use (applied to the running redis-server).",
      ),
      updateOption("daily-request-limit", "N", "Commands per UTC day and process, 0 = off."),
      updateOption("script-time-limit", "MS", "Longest a Lua script or function may run."),
      updateOption("allow-migrate", "on|off", "Let the standard token run MIGRATE."),
      updateOption(
        "eviction",
        "on|off",
        "Managed database used as a cache: evict keys at its max data size instead of refusing writes.",
      ),
      updateOption(
        "stop-unkillable-scripts",
        "on|off",
        "External Redis: let stashd stop it when a script that wrote cannot be killed.",
      ),
      DATA_DIR,
    ],
  },
  {
    name: "db list",
    args: "",
    summary: "List the databases and the settings each sets itself.",
    options: [DATA_DIR, JSON_OUT],
  },
  {
    name: "db reset-password",
    args: "NAME",
    summary: "New tokens for a database; the old ones stop working at once.",
    options: [FORCE, DATA_DIR],
  },
  {
    name: "db delete",
    args: "NAME",
    summary: "Remove a database; a managed one's data is deleted with it.",
    options: [FORCE, DATA_DIR],
  },
  {
    name: "queue reset-token",
    args: "",
    summary: "New queue API token (signing keys kept); the old one stops working at once.",
    options: [DATA_DIR],
  },
  CLUSTER_UP,
];

const HELP: OptionSpec = { flag: "help", type: "boolean", doc: "Show this help." };

/** node:util parseArgs options for a command (every command takes --help). */
export function parseOptions(cmd: CommandSpec): Record<string, { type: "string" | "boolean" }> {
  return Object.fromEntries([...cmd.options, HELP].map((o) => [o.flag, { type: o.type }]));
}

export function findCommand(words: string[]): CommandSpec | undefined {
  return (
    COMMANDS.find((c) => c.name === words.slice(0, 2).join(" ")) ??
    COMMANDS.find((c) => c.name === words[0])
  );
}

/** `stashd queue reset-token …` for a group word (`queue`, `db`); undefined for other words. */
export function groupUsage(group: string): string | undefined {
  const subs = COMMANDS.filter((c) => c.name.startsWith(`${group} `));
  if (subs.length === 0) return undefined;
  return subs
    .map((c) => `stashd ${c.name}${c.args ? ` ${c.args}` : ""} [--data-dir DIR]`)
    .join(", or ");
}

export function commandHelp(cmd: CommandSpec): string {
  const width = Math.max(...cmd.options.map((o) => optionLabel(o).length), 10);
  const lines = [...cmd.options, HELP].map((o) => `  ${optionLabel(o).padEnd(width)}  ${o.doc}`);
  const args = cmd.args ? ` ${cmd.args}` : "";
  return `Usage: stashd ${cmd.name}${args} [options]\n\n${cmd.summary}\n\nOptions:\n${lines.join("\n")}\n`;
}

function optionLabel(o: OptionSpec): string {
  return o.arg ? `--${o.flag} ${o.arg}` : `--${o.flag}`;
}

export function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => `${c.name} ${c.args}`.length));
  const lines = COMMANDS.map(
    (c) => `  stashd ${`${c.name} ${c.args}`.padEnd(width)}  ${c.summary}`,
  );
  return (
    `stashd: Upstash-compatible Redis REST gateway and message queue on your own Redis\n\n` +
    `Usage:\n${lines.join("\n")}\n  stashd --version\n\n` +
    `\`stashd COMMAND --help\` describes a command's options. Every setting is also an environment\n` +
    `variable (see the README's configuration table); options override them.\n`
  );
}
