import { combinedSizeRefusal, isSetAlgebra } from "./combined-size.js";
import { AppError } from "../../shared/errors.js";
import type { Principal } from "../databases/database.js";
import {
  REPLY_TOO_LARGE,
  type Arg,
  type EncodedCommands,
  type Reply,
} from "../../shared/redis/resp.js";
import type { RawReplies } from "../../shared/redis/raw-replies.js";
import {
  takesEncoded,
  type EncodingBackend,
  type RedisBackend,
} from "../../shared/redis/backend.js";
import type { Exchange, ExchangeOptions, ExchangeReceiver } from "../../shared/redis/connection.js";
import { plainName, refusalOf, type CommandTable } from "./policy.js";
import { namesWith } from "./traits.js";
import { NameCache } from "../fast/name-cache.js";
import { REWRITTEN_NAMES, rewriteCommand } from "./rewrite.js";
import { gatewayCommand, type GatewayHandler } from "./gateway-commands.js";
import { EmulationBatch } from "../emulate/batch.js";
import { mayEmulate } from "../emulate/route.js";
import { encodePipelineBody } from "../fast/encoded-pipeline.js";
import { readOnlyFcallRefusal, retryReadOnlyFcalls } from "../emulate/fcall-ro.js";
import { BlockingHold, blockingCall, type Interrupts } from "./blocking.js";
import { definesFunctions, refuseOomFunctions } from "./function-flags.js";

/**
 * The guard chain every command goes through, in this order: daily limit → command table →
 * policy (refusals) → gateway-handled commands (gateway-commands.ts) → commands the backend lacks
 * (JSON.* without the module, hash-field expiration, newer stream/BITOP commands) as Lua scripts
 * (emulate/route.ts) → rewrites → execution on the principal's pool. Single commands and
 * pipelines turn refusals into error replies; a transaction with any refused command is refused
 * whole before anything runs.
 *
 * Most commands need only the emulation and rewrite steps: a `plain` command (see `nameSteps`)
 * skips the policy and gateway steps, decided once per command name rather than per request.
 */

const errorReply = (value: string): Reply => ({ kind: "error", value });

/**
 * Commands per backend round trip. A pipeline is sent a slice at a time (each after the previous
 * one's replies), so one huge request never holds a connection, or Redis, for long: other
 * requests' commands get in between the slices.
 */
export const SLICE = 1000;
/**
 * Most arguments in one slice of a pipeline or transaction: a slice's commands are built, checked
 * and encoded in one go, and 1000 commands of 2600 arguments each (10 MB) held the event loop for
 * 0.4-0.6 s.
 */
export const SLICE_ARGS = 16_384;
/**
 * A pipeline or transaction of at most SLICE commands in a body up to this size is built and run
 * in one go (runShortPipeline, a transaction on a shared connection); a larger body goes in
 * slices of at most SLICE commands and SLICE_ARGS arguments: 100 commands of 26,000 arguments
 * each, built at once, held the loop for 0.4 s.
 */
export const SHORT_BODY_BYTES = 256 * 1024;
/** Commands that run a Lua script or function: their waits are watched against the time limit. */
const SCRIPT_CALLS = namesWith("script-call");

export const NONE_WATCHED: ReadonlySet<number> = new Set();
/** What the guard chain needs to know of a command name, whatever the arguments. */
export interface NameSteps {
  /** The policy and gateway steps can be skipped (see `nameSteps`). */
  readonly plain: boolean;
  /** `rewriteCommand` may change a command of this name (REWRITTEN_NAMES). */
  readonly rewritten: boolean;
}

/**
 * `plain`: the backend knows the command, the policy never refuses it (whatever its arguments),
 * and no gateway command, script watch or token rule applies to it (`plainName`, derived from
 * the command-traits table, traits.ts).
 */
const nameSteps = new NameCache<NameSteps>((name, table, nonAscii) => ({
  plain: plainName(name, table),
  // rewriteCommand decodes the name as UTF-8: a non-ASCII one may lower-case to a listed one.
  rewritten: REWRITTEN_NAMES.has(name) || nonAscii,
}));

/** The guard chain's per-name answers for this command (exported for the property test). */
export function stepsOf(argv: readonly Arg[], table: CommandTable): NameSteps {
  const first = argv[0];
  return first === undefined ? NOT_PLAIN : nameSteps.get(first, table);
}

const NOT_PLAIN: NameSteps = { plain: false, rewritten: true };

export function isScriptCall(argv: readonly Arg[]): boolean {
  const name = argv[0];
  return name !== undefined && name.length <= 10 && SCRIPT_CALLS.has(name.toString().toLowerCase());
}

/** `interrupts` end a blocking command's wait early (blocking.ts). */
export async function runSingle(
  p: Principal,
  argv: Arg[],
  interrupts?: Interrupts,
): Promise<Reply> {
  const [reply] = await runPipeline(p, [argv], interrupts);
  return reply as Reply;
}

/** What is left of a request's reply budget (STASHD_KV_MAX_REPLY_BYTES), and reply wording. */
export class RequestReplies {
  private left: number;
  private readonly killsBefore: number;

  constructor(private readonly p: Principal) {
    this.left = p.db.maxReplyBytes;
    this.killsBefore = p.db.scriptKills;
  }

  /** Sends one slice within the budget, its script calls watched against the time limit. */
  async exchange(
    target: Pick<RedisBackend, "exchange">,
    commands: Arg[][],
    watched: ReadonlySet<number>,
  ): Promise<Reply[]> {
    return this.explained((await this.send(target, commands, watched, false)).replies);
  }

  /**
   * `exchange`, the replies as RawReplies when the backend keeps them so (ExchangeOptions.raw)
   * and none is an error or an array holding one (the only replies `explain` changes).
   */
  async exchangeRaw(
    target: Pick<RedisBackend, "exchange">,
    commands: Arg[][],
    watched: ReadonlySet<number>,
  ): Promise<SliceReplies> {
    const sent = await this.send(target, commands, watched, true);
    if (sent.raw !== undefined && !sent.raw.hasErrors) return sent.raw;
    return this.explained(sent.replies);
  }

  /** `exchangeRaw` of commands already encoded, on a backend that takes them. */
  async exchangeEncoded(target: EncodingBackend, commands: EncodedCommands): Promise<SliceReplies> {
    return this.listOf(await target.exchangeEncoded(commands, this.encodedOptions()));
  }

  /**
   * The options of an exchange of encoded commands within what is left of the budget, its
   * replies taken as RawReplies (`listOf` then takes its outcome).
   */
  encodedOptions(): ExchangeOptions {
    return { maxReplyBytes: Math.max(0, this.left), watched: NONE_WATCHED, raw: true };
  }

  /** An exchange's replies as `exchangeRaw` gives them, counted against the budget. */
  listOf(sent: Exchange): SliceReplies {
    this.left -= sent.bytes;
    if (sent.raw !== undefined && !sent.raw.hasErrors) return sent.raw;
    return this.explained(sent.replies);
  }

  private async send(
    target: Pick<RedisBackend, "exchange">,
    commands: Arg[][],
    watched: ReadonlySet<number>,
    raw: boolean,
  ): Promise<Exchange> {
    // A script call's memory is watched while it is in flight (script-memory.ts).
    const done = watched.size > 0 ? this.p.db.scriptCallStarted() : undefined;
    try {
      const sent = await target.exchange(commands, {
        maxReplyBytes: Math.max(0, this.left),
        watched,
        raw,
      });
      this.left -= sent.bytes;
      return sent;
    } finally {
      done?.();
    }
  }

  /** One reply as `exchange` gives it (a command sent on its own, kv/fast/single.ts). */
  explainOne(reply: Reply): Reply {
    return this.explain(reply, true);
  }

  private explained(replies: Reply[]): Reply[] {
    // explain changes only errors, at the top or in an array: the usual slice has none.
    if (!replies.some((r) => r.kind === "error" || r.kind === "array")) return replies;
    return replies.map((r) => this.explain(r, true));
  }

  /** Replaces the backend's wording for the limits the gateway enforces (EXEC's items too). */
  private explain(reply: Reply, top: boolean): Reply {
    if (reply.kind === "array") {
      if (!top || !reply.value.some((r) => r.kind === "error")) return reply;
      const items = reply.value.map((r) => this.explain(r, false));
      return items.some((r, i) => r !== reply.value[i]) ? { kind: "array", value: items } : reply;
    }
    if (reply.kind !== "error") return reply;
    const db = this.p.db;
    if (reply.value.startsWith(REPLY_TOO_LARGE)) {
      return errorReply(
        `${REPLY_TOO_LARGE}: this request's replies exceed the max reply size of ${db.maxReplyBytes} bytes (STASHD_KV_MAX_REPLY_BYTES)`,
      );
    }
    if (
      db.scriptKills > this.killsBefore &&
      /killed by user with (SCRIPT|FUNCTION) KILL/i.test(reply.value)
    ) {
      const { reason, past } = db.scriptKillReason;
      return errorReply(
        reason === "memory"
          ? `ERR script killed: it ran past ${past}`
          : `ERR script killed: it ran longer than this database's script time limit of ${db.scriptTimeLimitMs} ms`,
      );
    }
    return reply;
  }
}

export function countCommands(p: Principal, n: number): void {
  if (n > p.db.maxCommandsPerRequest) {
    throw new AppError(
      "request_too_large",
      `ERR max commands per request exceeded: at most ${p.db.maxCommandsPerRequest} in one pipeline or transaction`,
    );
  }
  p.db.countCommands(n);
  p.db.commandsRun += n;
}

/** Reply objects, or RawReplies of a slice sent whole as it came (see `runSlice`). */
export type SliceReplies = Reply[] | RawReplies;

/** The Reply objects of a slice's replies. */
export function replyList(replies: SliceReplies): Reply[] {
  return Array.isArray(replies) ? replies : replies.toReplies();
}

/**
 * A pipeline of at most SLICE commands, its replies as RawReplies when every command was sent to
 * the backend as it came (no refusal, gateway command or emulation) and none is an error: the
 * usual pipeline, whose replies are then rendered without a Reply object each (http.ts).
 */
export async function runShortPipeline(
  p: Principal,
  commands: Arg[][],
  interrupts?: Interrupts,
): Promise<SliceReplies> {
  if (commands.length > SLICE) throw new Error(`runShortPipeline: over ${SLICE} commands`);
  countCommands(p, commands.length);
  const slices = await startSlices(p, true, interrupts);
  try {
    return await runSlice(p, commands, slices);
  } finally {
    slices.blocking.end();
  }
}

/**
 * A `/pipeline` body encoded straight into RESP (encoded-pipeline.ts) and sent as it is, when
 * runSlice would have sent every command in it as it came: each name `plain`, neither rewritten
 * nor emulated, and a backend that takes encoded commands (a single Redis). Undefined otherwise,
 * with nothing sent or counted: the caller then takes the general path. The body is not even
 * scanned when the backend cannot take it (a cluster) or before the database's command table is
 * loaded (its first requests).
 */
export async function runEncodedPipeline(
  p: Principal,
  body: Buffer,
): Promise<SliceReplies | undefined> {
  const pool = p.db.poolFor(p);
  if (!takesEncoded(pool)) return undefined;
  const commands = plainEncoded(p, body);
  if (commands === undefined) return undefined;
  countCommands(p, commands.count);
  return new RequestReplies(p).exchangeEncoded(pool, commands);
}

/**
 * runEncodedPipeline without a promise (as kv/fast/single.ts sends a command): the encoded body
 * sent on the shared connection when one is open, its outcome to `to`, the commands counted.
 * False, with nothing sent or counted, whenever runEncodedPipeline would not send it, no
 * connection is open, or the daily limit is reached: the caller takes the general path.
 */
export function sendEncodedPipeline(
  p: Principal,
  body: Buffer,
  replies: RequestReplies,
  to: ExchangeReceiver,
): boolean {
  const pool = p.db.poolFor(p);
  if (!takesEncoded(pool)) return false;
  const conn = pool.connectionNow?.();
  if (conn === undefined) return false;
  const commands = plainEncoded(p, body);
  if (commands === undefined) return false;
  try {
    countCommands(p, commands.count);
  } catch {
    return false;
  }
  conn.exchangeEncodedTo(commands, replies.encodedOptions(), to);
  return true;
}

/** The body encoded (encodePipelineBody) when every command in it would go to Redis as it came. */
function plainEncoded(p: Principal, body: Buffer): EncodedCommands | undefined {
  const table = p.db.loadedTable;
  if (table === undefined) return undefined;
  const pipeline = encodePipelineBody(body, Math.min(SLICE, p.db.maxCommandsPerRequest));
  if (pipeline === undefined) return undefined;
  const options = { fieldTtl: p.db.emulatesFieldTtl };
  for (const name of pipeline.names) {
    const steps = nameSteps.get(name, table);
    if (!steps.plain || steps.rewritten || mayEmulate(name, table, options)) return undefined;
  }
  return pipeline.commands;
}

export async function runPipeline(
  p: Principal,
  commands: Arg[][],
  interrupts?: Interrupts,
): Promise<Reply[]> {
  const replies: Reply[] = [];
  let from = 0;
  await runPipelineSlices(
    p,
    {
      length: commands.length,
      take: (n) => commands.slice(from, (from += n)),
    },
    (slice) => {
      for (const reply of slice) replies.push(reply);
    },
    interrupts,
  );
  return replies;
}

/** A pipeline's commands, handed out in order a slice at a time (see body-args.ts). */
export interface CommandSource {
  readonly length: number;
  /**
   * The next `n` commands (fewer at the end); with `maxArgs`, fewer once their arguments add up
   * to that many (at least one command).
   */
  take(n: number, maxArgs?: number): Arg[][];
}

/** Commands that can be handed out again from the first (see CommandList.restart). */
export interface RereadableCommands extends CommandSource {
  restart(): void;
  /** Bytes of the body they are read from. */
  readonly bytes: number;
}

/**
 * Runs a pipeline SLICE commands at a time: each slice is taken from `commands`, sent, and its
 * replies (final: gateway-handled commands and read-only FCALL retries run after the slice's
 * other commands) handed to `done` before the next slice is taken. So a huge pipeline holds
 * neither all its commands nor all its replies at once.
 */
export async function runPipelineSlices(
  p: Principal,
  commands: CommandSource,
  done: (replies: Reply[]) => void,
  interrupts?: Interrupts,
): Promise<void> {
  countCommands(p, commands.length);
  const slices = await startSlices(p, false, interrupts);
  try {
    for (let from = 0; from < commands.length;) {
      const slice = commands.take(SLICE, SLICE_ARGS);
      if (slice.length === 0) break;
      from += slice.length;
      done(replyList(await runSlice(p, slice, slices)));
    }
  } finally {
    slices.blocking.end();
  }
}

async function startSlices(
  p: Principal,
  raw: boolean,
  interrupts: Interrupts | undefined,
): Promise<PipelineSlices> {
  const table = p.db.loadedTable ?? (await p.db.commandTable());
  const pool = p.db.poolFor(p);
  return {
    table,
    emulated: new EmulationBatch(p.db, table, p.db.emulatesFieldTtl),
    budget: new RequestReplies(p),
    pool,
    // Blocking commands are served, on the request's own connection (blocking.ts).
    policy: {
      allowMigrate: p.db.allowMigrate,
      blocking: "exclusive",
      maxReplyBytes: p.db.maxReplyBytes,
      maxRecordBytes: p.db.maxRecordBytes,
    },
    blocking: new BlockingHold(p, pool, interrupts),
    interrupts,
    raw,
  };
}

/** What the slices of one pipeline share. */
interface PipelineSlices {
  table: CommandTable;
  emulated: EmulationBatch;
  budget: RequestReplies;
  pool: RedisBackend;
  policy: {
    allowMigrate: boolean;
    blocking: "exclusive";
    maxReplyBytes: number;
    maxRecordBytes: number;
  };
  /** The request's blocking commands; from the first on, its slices go to their connection. */
  blocking: BlockingHold;
  /** What tells the request's queries that its client went away (gateway-commands.ts). */
  interrupts: Interrupts | undefined;
  /** The caller takes RawReplies (see runShortPipeline). */
  raw: boolean;
}

async function runSlice(p: Principal, commands: Arg[][], s: PipelineSlices): Promise<SliceReplies> {
  const replies: (Reply | undefined)[] = new Array<Reply | undefined>(commands.length);
  const special: [number, GatewayHandler][] = [];
  const toSend: Arg[][] = [];
  const sendIndex: number[] = [];
  let watched: Set<number> | undefined;
  let defines: number[] | undefined;
  // Pipelines repeat names (100 GETs): the previous command's answers serve an equal name.
  let lastName: Arg | undefined;
  let lastSteps = NOT_PLAIN;
  let lastEmulated = true;
  for (let i = 0; i < commands.length; i++) {
    const argv = commands[i] as Arg[];
    const first = argv[0];
    if (first === undefined || first !== lastName) {
      lastName = first;
      lastSteps = stepsOf(argv, s.table);
      lastEmulated = first === undefined || s.emulated.mayRewrite(first);
    }
    const steps = lastSteps;
    const plain = steps.plain;
    const refusal = plain
      ? undefined
      : (refusalOf(argv, s.table, s.policy) ?? readOnlyFcallRefusal(p, argv));
    const handler = refusal === undefined && !plain ? gatewayCommand(argv) : undefined;
    const script =
      refusal === undefined && !handler && lastEmulated ? s.emulated.rewrite(argv, i) : undefined;
    if (refusal !== undefined) replies[i] = errorReply(refusal);
    else if (handler) special.push([i, handler]);
    else if (script !== undefined && !Array.isArray(script)) replies[i] = script;
    else {
      let out = script ?? (steps.rewritten ? rewriteCommand(argv, p.db.aliases) : argv);
      const tooBig = plain || !isSetAlgebra(out) ? undefined : await combinedRefusal(p, out, s);
      if (tooBig !== undefined) {
        replies[i] = errorReply(tooBig);
        continue;
      }
      const timeouts = plain ? undefined : blockingCall(out, s.table);
      if (timeouts) {
        const admitted = await s.blocking.admit(out, timeouts);
        if (typeof admitted === "string") {
          replies[i] = errorReply(admitted);
          continue;
        }
        out = admitted;
      }
      // A plain command sent as it is is never a script call (traits.ts: "script-call").
      if ((!plain || out !== argv) && isScriptCall(out)) (watched ??= new Set()).add(toSend.length);
      if (!plain && definesFunctions(out)) (defines ??= []).push(i);
      toSend.push(out);
      sendIndex.push(i);
    }
  }
  // Every command sent as it came, nothing to settle: the replies need no step after the
  // exchange (an error reply, for the FCALL retry, makes exchange give Reply objects).
  const whole = s.raw && toSend.length === commands.length && !s.emulated.pending;
  if (toSend.length > 0) {
    const target = s.blocking.target();
    const sent = whole
      ? await s.budget.exchangeRaw(target, toSend, watched ?? NONE_WATCHED)
      : await s.budget.exchange(target, toSend, watched ?? NONE_WATCHED);
    if (!Array.isArray(sent)) return sent;
    for (let j = 0; j < sent.length; j++) replies[sendIndex[j] as number] = sent[j];
    // Per slice, so the next slices call scripts by SHA once Redis holds them. Both steps are
    // awaited only when they have work: an await costs a single GET's latency a few microtasks.
    if (s.emulated.pending) await s.emulated.settle(replies as Reply[], commands, s.pool);
    if (anyError(replies)) await retryReadOnlyFcalls(p, commands, replies);
    if (defines) await refuseOomFunctions(p, defines, replies);
  }
  // Gateway-handled commands run after the slice they came in (documented in compatibility.md).
  for (const [i, handler] of special) {
    replies[i] = await handler(p, commands[i] as Arg[], s.interrupts);
  }
  return replies as Reply[];
}

/** Set algebra past the database's element limit (combined-size.ts), read with the token's pool. */
function combinedRefusal(p: Principal, argv: Arg[], s: PipelineSlices) {
  return combinedSizeRefusal(argv, s.pool, p.db.maxCombinedElements);
}

function anyError(replies: readonly (Reply | undefined)[]): boolean {
  for (const reply of replies) if (reply?.kind === "error") return true;
  return false;
}
