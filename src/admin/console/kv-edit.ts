import { AppError } from "../../shared/errors.js";
import { LuaScript } from "../../shared/lua/script.js";
import { kvCommands, resultOf } from "./upstream.js";

/**
 * A command argument as the browser sends it: text (sent to Redis as its UTF-8 bytes) or
 * `{"hex"}`, the bytes themselves, for members that are not UTF-8 (the form GET .../key shows
 * them in).
 */
export type EditArg = string | { hex: string };

/**
 * One edit of POST /console/api/kv/<db>/edit (docs/console.md, "Compare before save"): the
 * `writes` run only when `read` still answers `expected`; without `read` they run at once.
 */
export interface Edit {
  key: string;
  read: EditArg[] | undefined;
  expected: EditArg;
  writes: EditArg[][];
}

/** Most write commands of one edit (a list removal takes two). */
const MAX_WRITES = 10;

const script = LuaScript.fromFile(new URL("./lua/kv-edit.lua", import.meta.url));

const HEX = /^(?:[0-9a-fA-F]{2})*$/;

function isArg(a: unknown): a is EditArg {
  if (typeof a === "string") return true;
  if (typeof a !== "object" || a === null) return false;
  const hex = (a as { hex?: unknown }).hex;
  return Object.keys(a).length === 1 && typeof hex === "string" && HEX.test(hex);
}

const isCommand = (c: unknown): c is EditArg[] =>
  Array.isArray(c) && c.length > 0 && c.every(isArg);

/**
 * The edit a request body asks for, checked: `key` a string, `read` (optional) a command,
 * `expected` an argument (required with `read`), `writes` 1-10 commands; a command is a non-empty
 * array of arguments, each a string or `{"hex": "<pairs of hex digits>"}`.
 */
export function parseEdit(body: Record<string, unknown>): Edit {
  const { key, read, expected, writes } = body;
  if (typeof key !== "string") throw new AppError("bad_request", "key must be a string");
  if (read !== undefined && !isCommand(read)) {
    throw new AppError("bad_request", "read must be a command: a non-empty array of arguments");
  }
  if (read !== undefined && !isArg(expected)) {
    throw new AppError("bad_request", 'expected must be a string or {"hex": "<hex pairs>"}');
  }
  if (!Array.isArray(writes) || writes.length === 0 || writes.length > MAX_WRITES) {
    throw new AppError("bad_request", `writes must be 1-${MAX_WRITES} commands`);
  }
  if (!writes.every(isCommand)) {
    throw new AppError(
      "bad_request",
      'each write must be a non-empty array of strings or {"hex": "<hex pairs>"}',
    );
  }
  return { key, read, expected: read === undefined ? "" : (expected as EditArg), writes };
}

const hexOf = (a: EditArg): string =>
  typeof a === "string" ? Buffer.from(a, "utf8").toString("hex") : a.hex.toLowerCase();

const counted = (command: readonly EditArg[]): string[] => [
  String(command.length),
  ...command.map(hexOf),
];

/**
 * Runs an edit as one kv-edit.lua call through the KV REST API with `token` (the console's edits
 * use the database's standard token; the read-only one cannot write). Answers whether it wrote:
 * false when the value changed since the page read it.
 */
export async function runEdit(db: { kvUrl: string; token: string }, edit: Edit): Promise<boolean> {
  const args = [...counted(edit.read ?? []), hexOf(edit.expected), ...edit.writes.flatMap(counted)];
  const command = script.command("text", [edit.key], args).map(String);
  const [reply] = await kvCommands(db.kvUrl, db.token, [command]);
  return Number(resultOf(reply)) === 1;
}
