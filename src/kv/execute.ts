import { AppError } from "../shared/errors.js";
import type { Arg, Reply } from "../shared/redis/resp.js";
import type { Principal } from "./database.js";
import { refusalOf } from "./policy.js";
import { upstashError } from "./reply.js";
import { rewriteCommand } from "./rewrite.js";
import { gatewayCommand, isRestToken } from "./gateway-commands.js";
import { JsonBatch } from "./json/batch.js";

/**
 * The guard chain every command goes through, in this order: daily limit → command table →
 * policy (refusals) → gateway-handled commands (gateway-commands.ts) → JSON.* as Lua scripts when
 * the backend has no JSON module (json/) → rewrites → execution on the principal's pool. Single
 * commands and pipelines turn refusals into error replies; a transaction with any refused
 * command is refused whole before anything runs.
 */

const errorReply = (value: string): Reply => ({ kind: "error", value });

export async function runSingle(p: Principal, argv: Arg[]): Promise<Reply> {
  const [reply] = await runPipeline(p, [argv]);
  return reply as Reply;
}

export async function runPipeline(p: Principal, commands: Arg[][]): Promise<Reply[]> {
  p.db.countCommands(commands.length);
  const table = await p.db.commandTable();
  const replies: (Reply | Promise<Reply> | undefined)[] = new Array<Reply | undefined>(
    commands.length,
  );
  const toSend: Arg[][] = [];
  const sendIndex: number[] = [];
  const special: [number, NonNullable<ReturnType<typeof gatewayCommand>>][] = [];
  const json = new JsonBatch(p.db, table);
  commands.forEach((argv, i) => {
    const refusal = refusalOf(argv, table);
    const handler = refusal === undefined ? gatewayCommand(argv) : undefined;
    const script = refusal === undefined && !handler ? json.rewrite(argv, i) : undefined;
    if (refusal !== undefined) replies[i] = errorReply(refusal);
    else if (handler) special.push([i, handler]);
    else if (script !== undefined && !Array.isArray(script)) replies[i] = script;
    else {
      toSend.push(script ?? rewriteCommand(argv, p.db.aliases));
      sendIndex.push(i);
    }
  });
  if (toSend.length > 0) {
    const pool = p.db.poolFor(p);
    const sent = await pool.execMany(toSend);
    sent.forEach((reply, j) => (replies[sendIndex[j] as number] = reply));
    await json.settle(replies as Reply[], commands, pool);
  }
  // Gateway-handled commands run after the batch they came in (documented in compatibility.md).
  for (const [i, handler] of special) replies[i] = await handler(p, commands[i] as Arg[]);
  return replies as Reply[];
}

/**
 * MULTI … EXEC on one exclusively held connection. Returns EXEC's per-command replies (runtime
 * errors stay per item); throws a 400 when the transaction is refused or Redis aborts it.
 */
export async function runTransaction(p: Principal, commands: Arg[][]): Promise<Reply[]> {
  p.db.countCommands(commands.length);
  const table = await p.db.commandTable();
  for (const argv of commands) {
    const refusal = isRestToken(argv)
      ? "ERR ACL RESTTOKEN is not allowed in a transaction"
      : refusalOf(argv, table);
    if (refusal !== undefined) {
      throw new AppError(
        "command_refused",
        `${refusal}. Transaction discarded, nothing was executed.`,
      );
    }
  }
  // The first JSON.* call of each script carries its text: a NOSCRIPT inside EXEC can't be retried.
  const json = new JsonBatch(p.db, table, true);
  const rewritten = commands.map((argv, i) => {
    const script = json.rewrite(argv, i);
    if (script !== undefined && !Array.isArray(script)) {
      throw new AppError(
        "command_refused",
        `${script.kind === "error" ? script.value : ""}. Transaction discarded, nothing was executed.`,
      );
    }
    return script ?? rewriteCommand(argv, p.db.aliases);
  });
  const pool = p.db.poolFor(p);
  const conn = await pool.acquire();
  let replies: Reply[];
  try {
    replies = await conn.sendMany([["MULTI"], ...rewritten, ["EXEC"]]);
  } catch (err) {
    pool.discard(conn);
    throw err;
  }
  pool.release(conn);
  json.rename(replies, 1);
  const exec = replies[replies.length - 1] as Reply;
  if (exec.kind === "array") {
    await json.settle(exec.value, commands, pool);
    return exec.value;
  }
  const first = replies.find((r) => r.kind === "error");
  const text = exec.kind === "error" ? exec.value : "ERR transaction aborted";
  const cause = first?.kind === "error" && first !== exec ? ` (${upstashError(first.value)})` : "";
  throw new AppError("redis_error", `${upstashError(text)}${cause}`);
}
