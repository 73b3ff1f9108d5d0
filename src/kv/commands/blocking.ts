import { AppError, type ErrorCode } from "../../shared/errors.js";
import type { Interrupts } from "../../shared/http/interrupts.js";
import type { Exchange, ExchangeOptions } from "../../shared/redis/connection.js";
import type { RedisBackend } from "../../shared/redis/backend.js";
import type { Arg } from "../../shared/redis/resp.js";
import type { Principal } from "../databases/database.js";
import type { ExclusiveLease } from "../databases/exclusive-limits.js";
import type { CommandTable } from "./policy.js";

/**
 * Blocking commands over REST (docs/compatibility.md, "Blocking commands"). A request whose
 * single command or pipeline holds one runs, from that command on, on an exclusive connection of
 * its own (never a pooled one other requests share), taken within the database's bound on
 * blocked requests (STASHD_KV_MAX_BLOCKED, exclusive-limits.ts; past it 429). Its blocking
 * commands wait at most STASHD_KV_MAX_BLOCK_MS together: each timeout (0, forever, included) is
 * cut to what is left of that, and one with nothing left is answered with an error, unsent.
 * Redis ends waits only at its cron's pace (every 100 ms at hz 10: BLPOP with 0.001 s waits
 * 100 ms), so the declared timeouts alone do not bound a pipeline of thousands of tiny ones: the
 * connection is also held at most STASHD_KV_MAX_BLOCK_MS + STASHD_KV_COMMAND_TIMEOUT_MS of wall
 * time. When that passes, the client goes away or stashd stops, the connection is closed: Redis
 * frees a blocked client whose socket closed at once, and the connection never goes back to the
 * pool.
 */

/** Where a blocking command's timeouts are, and whether they count seconds (a float) or ms. */
export interface BlockingTimeouts {
  readonly at: readonly number[];
  readonly unit: "s" | "ms";
}

/** What a command flagged `blocking` does: never blocks with these arguments, or unknown form. */
export type BlockingForm = BlockingTimeouts | "none" | "unknown";

/** Commands whose timeout is the last argument, in seconds. */
const LAST_ARGUMENT = new Set(["blpop", "brpop", "brpoplpush", "blmove", "bzpopmin", "bzpopmax"]);
/** Commands whose timeout is the first argument, in seconds. */
const FIRST_ARGUMENT = new Set(["blmpop", "bzmpop"]);

/**
 * The form of a command the backend flags `blocking` (`name` lower-case): where its timeouts are,
 * "none" for XREAD/XREADGROUP without BLOCK, "unknown" for the others (WAIT, WAITAOF, a newer
 * Redis's new ones), which are refused.
 */
export function blockingForm(name: string, argv: readonly Arg[]): BlockingForm {
  if (LAST_ARGUMENT.has(name)) return { at: argv.length > 1 ? [argv.length - 1] : [], unit: "s" };
  if (FIRST_ARGUMENT.has(name)) return { at: argv.length > 1 ? [1] : [], unit: "s" };
  if (name !== "xread" && name !== "xreadgroup") return "unknown";
  const at = blockOptions(argv);
  return at.length === 0 ? "none" : { at, unit: "ms" };
}

/**
 * The positions of BLOCK values among XREAD / XREADGROUP options, read as Redis reads them (up to
 * STREAMS or an argument that is no option; a repeated BLOCK: the last counts). GROUP and NOACK
 * are skipped for both commands: reading more than Redis does can only find more BLOCKs, so a
 * command that blocks is never taken for one that does not.
 */
function blockOptions(argv: readonly Arg[]): number[] {
  const at: number[] = [];
  for (let i = 1; i < argv.length; i++) {
    const more = argv.length - i - 1;
    const option = (argv[i] as Arg).toString().toLowerCase();
    if (option === "block" && more >= 1) at.push(++i);
    else if (option === "count" && more >= 1) i++;
    else if (option === "group" && more >= 2) i += 2;
    else if (option !== "noack") break; // STREAMS, or a syntax error: Redis reads no further
  }
  return at;
}

/** The timeouts of a command that will block now (undefined: it does not, or is no command). */
export function blockingCall(
  argv: readonly Arg[],
  table: CommandTable,
): BlockingTimeouts | undefined {
  const first = argv[0];
  if (first === undefined || first.length > 10) return undefined;
  const name = first.toString().toLowerCase();
  if (table.get(name)?.flags.has("blocking") !== true) return undefined;
  const form = blockingForm(name, argv);
  return typeof form === "string" ? undefined : form;
}

/** What a timeout argument asks for, in whole ms (Redis rounds up), or Redis's error for it. */
function timeoutMs(arg: Arg, unit: "s" | "ms"): number | string {
  const text = arg.toString();
  if (unit === "ms") {
    if (/^\d+$/.test(text)) return Number(text);
    return /^-\d+$/.test(text)
      ? "ERR timeout is negative"
      : "ERR timeout is not an integer or out of range";
  }
  // Plain decimals only: a form Redis's strtold reads and Number does not (hex floats) is refused
  // rather than passed on uncut, since Redis might read it as 0 (forever).
  const plain = /^-?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(text);
  const seconds = plain ? Number(text) : NaN;
  if (seconds < 0) return "ERR timeout is negative";
  if (!Number.isFinite(seconds)) return "ERR timeout is not a float or out of range";
  return Math.ceil(seconds * 1000);
}

/** The argument that stands for `ms`, in the command's unit. */
function timeoutText(ms: number, unit: "s" | "ms"): string {
  return unit === "ms" ? String(ms) : String(ms / 1000);
}

export type { Interrupts };

/**
 * One request's blocking commands: their time budget, and the exclusive connection they run on
 * from the first one on (`target`). `end` gives the connection back; call it once the request's
 * last exchange is over.
 */
export class BlockingHold {
  private left: number;
  private sliceWait = 0;
  private lease: ExclusiveLease | undefined;
  private interrupted: { code: ErrorCode; why: string } | undefined;
  private unwatch: (() => void) | undefined;
  private deadline: NodeJS.Timeout | undefined;

  constructor(
    private readonly p: Principal,
    private readonly pool: RedisBackend,
    private readonly interrupts: Interrupts | undefined,
  ) {
    this.left = p.db.maxBlockMs;
  }

  /**
   * `argv` with its timeouts cut to what is left of the request's budget (which they then use
   * up), on the request's own connection, taken now if not yet; or the error reply for it.
   * Throws the 429 of a database at its bound of blocked requests.
   */
  async admit(argv: Arg[], timeouts: BlockingTimeouts): Promise<Arg[] | string> {
    const out = [...argv];
    let wait = 0;
    for (const i of timeouts.at) {
      const asked = timeoutMs(argv[i] as Arg, timeouts.unit);
      if (typeof asked === "string") return asked;
      if (this.left < 1) return this.spent();
      const ms = asked === 0 || asked > this.left ? this.left : asked;
      if (ms !== asked) out[i] = timeoutText(ms, timeouts.unit);
      wait = Math.max(wait, ms);
    }
    await this.take();
    this.left -= wait;
    this.sliceWait += wait;
    return out;
  }

  /** Where a slice goes: the request's own connection once taken, else the shared pool. */
  target(): Pick<RedisBackend, "exchange"> {
    const lease = this.lease;
    if (!lease) return this.pool;
    // The slice's replies may take as long as its blocking commands wait, plus the usual deadline.
    const replyTimeoutMs = this.sliceWait + this.p.db.commandTimeoutMs;
    this.sliceWait = 0;
    return {
      exchange: (commands, opts: ExchangeOptions): Promise<Exchange> =>
        lease.conn.exchange(commands, { ...opts, replyTimeoutMs }).catch((err: unknown) => {
          const ended = this.interrupted;
          if (ended === undefined) throw err;
          throw new AppError(ended.code, `ERR blocking command ended: ${ended.why}`, {
            cause: err,
          });
        }),
    };
  }

  /** Gives the connection back: to the pool when its replies are all in, else closed. */
  end(): void {
    this.unwatch?.();
    clearTimeout(this.deadline);
    const lease = this.lease;
    if (!lease) return;
    if (lease.conn.alive && this.interrupted === undefined) lease.release();
    else lease.discard();
  }

  private async take(): Promise<void> {
    if (this.lease) return;
    this.lease = await this.p.db.limits.leaseBlocked(this.pool);
    this.unwatch = this.interrupts?.watch((why) => this.interrupt("backend_unavailable", why));
    const { maxBlockMs, commandTimeoutMs } = this.p.db;
    const limit = maxBlockMs + commandTimeoutMs;
    this.deadline = setTimeout(
      () =>
        this.interrupt(
          "request_too_large",
          `the request held its own connection for ${limit} ms (STASHD_KV_MAX_BLOCK_MS + STASHD_KV_COMMAND_TIMEOUT_MS); send fewer blocking commands in one request`,
        ),
      limit,
    );
    this.deadline.unref();
  }

  /**
   * Closes the connection: that ends the wait on Redis at once (it frees a client whose socket
   * closed, blocked or not) and keeps a connection in an unknown state out of the pool. The
   * request's pending exchange then fails with `why`.
   */
  private interrupt(code: ErrorCode, why: string): void {
    if (this.interrupted !== undefined) return;
    this.interrupted = { code, why };
    this.lease?.discard();
  }

  private spent(): string {
    return `ERR blocking commands of one request may wait ${this.p.db.maxBlockMs} ms together (STASHD_KV_MAX_BLOCK_MS), and earlier ones of this request take it all`;
  }
}
