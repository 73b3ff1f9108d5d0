import { combinedSizeRefusal, isSetAlgebra } from "./combined-size.js";
import { definesFunctions, refuseOomFunctions } from "./function-flags.js";
import { AppError } from "../../shared/errors.js";
import type { RedisBackend } from "../../shared/redis/backend.js";
import type { Arg, Reply } from "../../shared/redis/resp.js";
import type { Principal } from "../databases/database.js";
import type { ExclusiveLease } from "../databases/exclusive-limits.js";
import { EmulationBatch } from "../emulate/batch.js";
import { readOnlyFcallRefusal } from "../emulate/fcall-ro.js";
import {
  countCommands,
  isScriptCall,
  NONE_WATCHED,
  RequestReplies,
  SHORT_BODY_BYTES,
  SLICE,
  SLICE_ARGS,
  type RereadableCommands,
} from "./execute.js";
import {
  addKeyTypes,
  servedOutsideTransactions,
  isScanWithType,
  withoutWithType,
} from "./gateway-commands.js";
import { refusalOf, type CommandTable } from "./policy.js";
import { isStorageRefusal } from "../../shared/redis/refusal.js";
import { upstashError } from "../reply/reply.js";
import { rewriteCommand } from "./rewrite.js";

/**
 * MULTI … EXEC, SLICE commands at a time. The commands are read twice: first each is checked
 * (a transaction with any refused command is refused whole before anything runs), then read
 * again, rewritten and sent. Between slices other requests get a turn, and a huge transaction's
 * commands never all exist at once.
 */

const nextTurn = (): Promise<unknown> => new Promise((resolve) => setImmediate(resolve));

/**
 * Returns EXEC's per-command replies (runtime errors stay per item); throws a 400 when the
 * transaction is refused or Redis aborts it. EXEC's reply counts against the reply budget whole.
 */
export async function runTransaction(p: Principal, commands: RereadableCommands): Promise<Reply[]> {
  const pool = p.db.poolFor(p);
  // One that needs an exclusive connection takes its place in line first (bounded per database,
  // exclusive-limits.ts): refused with 429 / 503 it cost no checking, and waiting it holds no
  // rewritten commands.
  const lease = fitsShared(pool, commands) ? undefined : await p.db.limits.lease(pool);
  try {
    return await checkAndRun(p, pool, lease, commands);
  } finally {
    lease?.release(); // unless runMultiExec discarded it
  }
}

/**
 * Whether a transaction goes out as one exchange on a shared connection: its commands are then
 * built at once, so only a short one in a small body (SHORT_BODY_BYTES) does.
 */
function fitsShared(pool: RedisBackend, commands: RereadableCommands): boolean {
  return (
    pool.sharedTransactions === true &&
    commands.length <= SLICE &&
    commands.bytes <= SHORT_BODY_BYTES
  );
}

async function checkAndRun(
  p: Principal,
  pool: RedisBackend,
  lease: ExclusiveLease | undefined,
  commands: RereadableCommands,
): Promise<Reply[]> {
  countCommands(p, commands.length);
  const table = p.db.loadedTable ?? (await p.db.commandTable());
  await checkAll(p, table, commands);
  commands.restart();
  // The first call of each emulation script carries its text: a NOSCRIPT inside EXEC can't be
  // retried.
  const emulated = new EmulationBatch(p.db, table, p.db.emulatesFieldTtl, true);
  const withType: number[] = [];
  const defines: number[] = [];
  let from = 0;
  let scripts = false;
  const nextSlice = (maxArgs?: number): Arg[][] => {
    const slice = commands.take(SLICE, maxArgs).map((argv, j) => {
      const script = emulated.rewrite(argv, from + j) as Arg[] | undefined;
      if (isScanWithType(argv)) {
        withType.push(from + j);
        return withoutWithType(argv);
      }
      const out = script ?? rewriteCommand(argv, p.db.aliases);
      if (definesFunctions(out)) defines.push(from + j);
      return out;
    });
    from += slice.length;
    scripts ||= slice.some(isScriptCall);
    return slice;
  };
  const replies = await runMultiExec(p, pool, lease, commands.length, nextSlice, () => scripts);
  emulated.rename(replies, 1);
  const exec = replies[replies.length - 1] as Reply;
  if (exec.kind === "array") {
    // In a transaction settle retries nothing, so it needs no commands.
    await emulated.settle(exec.value, [], pool);
    for (const i of withType) exec.value[i] = await addKeyTypes(pool, exec.value[i] as Reply);
    if (defines.length > 0) await refuseOomFunctions(p, defines, exec.value);
    return exec.value;
  }
  const first = replies.find((r) => r.kind === "error");
  const text = exec.kind === "error" ? exec.value : "ERR transaction aborted";
  const cause = first?.kind === "error" && first !== exec ? ` (${upstashError(first.value)})` : "";
  const refused = [text, first?.kind === "error" ? first.value : ""].some(isStorageRefusal);
  throw new AppError(
    refused ? "insufficient_storage" : "redis_error",
    `${upstashError(text)}${cause}`,
  );
}

/** Refuses the transaction if any command is refused or has no valid emulation. */
async function checkAll(
  p: Principal,
  table: CommandTable,
  commands: RereadableCommands,
): Promise<void> {
  // Inside MULTI Redis runs blocking commands without blocking.
  const policy = {
    allowMigrate: p.db.allowMigrate,
    blocking: "transaction" as const,
    maxReplyBytes: p.db.maxReplyBytes,
    maxRecordBytes: p.db.maxRecordBytes,
  };
  const emulated = new EmulationBatch(p.db, table, p.db.emulatesFieldTtl, true);
  // A refusal anywhere is reported before an emulation's error.
  let emulationError: string | undefined;
  for (let from = 0, taken = 0; from < commands.length; from += taken) {
    if (from > 0) await nextTurn();
    const slice = commands.take(SLICE, SLICE_ARGS);
    taken = slice.length;
    if (taken === 0) break;
    for (const [j, argv] of slice.entries()) {
      const refusal =
        servedOutsideTransactions(argv) ??
        refusalOf(argv, table, policy) ??
        readOnlyFcallRefusal(p, argv);
      if (refusal !== undefined) discard(refusal);
      if (isSetAlgebra(argv)) {
        const tooBig = await combinedSizeRefusal(argv, p.db.poolFor(p), p.db.maxCombinedElements);
        if (tooBig !== undefined) discard(tooBig);
      }
      const script = emulated.rewrite(argv, from + j);
      if (script !== undefined && !Array.isArray(script))
        emulationError ??= script.kind === "error" ? script.value : "";
    }
  }
  if (emulationError !== undefined) discard(emulationError);
}

function discard(reason: string): never {
  throw new AppError("command_refused", `${reason}. Transaction discarded, nothing was executed.`);
}

/**
 * MULTI, the commands, EXEC: every reply, MULTI's first and EXEC's last. On a single Redis, a
 * transaction of up to SLICE commands goes out as one exchange on a shared pipelined connection:
 * a connection writes each exchange's commands contiguously, so nothing of other requests can
 * fall between MULTI and EXEC, and the connection is out of MULTI again once EXEC is read. A
 * longer one is sent a slice at a time on the exclusive connection of `lease`. `scripts` says,
 * once every slice was taken, whether EXEC runs a script (then it is watched).
 */
async function runMultiExec(
  p: Principal,
  pool: RedisBackend,
  lease: ExclusiveLease | undefined,
  length: number,
  /** The next commands; with `maxArgs`, fewer once they hold that many arguments. */
  nextSlice: (maxArgs?: number) => Arg[][],
  scripts: () => boolean,
): Promise<Reply[]> {
  const budget = new RequestReplies(p);
  if (!lease) {
    const all = [["MULTI"], ...nextSlice(), ["EXEC"]];
    return budget.exchange(pool, all, scripts() ? new Set([all.length - 1]) : NONE_WATCHED);
  }
  const { conn } = lease;
  const replies: Reply[] = [];
  try {
    replies.push(await conn.send(["MULTI"]));
    for (let from = 0; from < length;) {
      const slice = nextSlice(SLICE_ARGS);
      if (slice.length === 0) break;
      from += slice.length;
      for (const r of await conn.sendMany(slice)) replies.push(r);
    }
    const [exec] = await budget.exchange(conn, [["EXEC"]], scripts() ? new Set([0]) : NONE_WATCHED);
    replies.push(exec as Reply);
  } catch (err) {
    lease.discard();
    throw err;
  }
  return replies;
}
