import { AppError } from "../../shared/errors.js";
import type { Logger } from "../../shared/log.js";
import type { Reply } from "../../shared/redis/resp.js";
import type { Partitions } from "./partitions.js";
import type { QueueRedis } from "./redis.js";

/**
 * Whether the queue's Redis keeps what it acknowledged (docs/operations.md, A safe queue Redis).
 * A Redis that evicts keys under memory pressure (`maxmemory-policy` other than `noeviction`)
 * drops messages and signing keys without an error; one with persistence off loses them all at
 * its next restart. stashd stores no queue key with a TTL it could spare, so only `noeviction`
 * is safe (a `volatile-*` policy would still drop deduplication keys and retained logs).
 */
export interface StoreFindings {
  /** Why acknowledged messages would be lost: the start is refused, writes answer 503. */
  unsafe: string[];
  /** What could not be checked, or is weaker than it should be: logged. */
  warnings: string[];
}

type Exec = Pick<QueueRedis, "exec">;

/**
 * Inspects one Redis: `CONFIG GET`, or where a provider's ACL refuses CONFIG, `INFO memory` /
 * `INFO persistence`. What neither shows is a warning, never a refusal.
 */
export async function inspectRedis(redis: Exec): Promise<StoreFindings> {
  const found: StoreFindings = { unsafe: [], warnings: [] };
  const policy =
    (await configValue(redis, "maxmemory-policy")) ??
    infoField(await info(redis, "memory"), "maxmemory_policy");
  if (policy === undefined) {
    found.warnings.push(
      "cannot read maxmemory-policy (CONFIG GET and INFO refused): make sure it is noeviction",
    );
  } else if (policy !== "noeviction") {
    found.unsafe.push(
      `maxmemory-policy is ${policy}: Redis may evict queued messages and signing keys; ` +
        "set maxmemory-policy noeviction",
    );
  }
  inspectPersistence(found, await persistence(redis));
  return found;
}

/** appendonly and save as Redis reports them; undefined where it would not say. */
interface Persistence {
  aof: boolean | undefined;
  /** RDB save points ("" = none). */
  save: string | undefined;
}

async function persistence(redis: Exec): Promise<Persistence> {
  const appendonly = await configValue(redis, "appendonly");
  const save = await configValue(redis, "save");
  if (appendonly !== undefined) return { aof: appendonly === "yes", save };
  const aof = infoField(await info(redis, "persistence"), "aof_enabled");
  return { aof: aof === undefined ? undefined : aof === "1", save };
}

/** Adds what `p` means for acknowledged messages to `found`. */
function inspectPersistence(found: StoreFindings, p: Persistence): void {
  if (p.aof === true) return;
  if (p.aof === undefined) {
    found.warnings.push(
      "cannot read whether the queue Redis persists (CONFIG GET and INFO refused): " +
        "make sure appendonly is yes",
    );
  } else if (p.save === "") {
    found.unsafe.push(
      'persistence is off (appendonly no, save ""): a restart of Redis loses every ' +
        "message; set appendonly yes",
    );
  } else if (p.save === undefined) {
    found.warnings.push(
      "appendonly is no and the RDB save points cannot be read: make sure appendonly is yes",
    );
  } else {
    found.warnings.push(
      `appendonly is no (RDB snapshots only, save "${p.save}"): messages accepted since the ` +
        "last snapshot are lost if Redis crashes; set appendonly yes",
    );
  }
}

/** A `CONFIG GET` value, undefined when refused (ACL, renamed command) or missing. */
async function configValue(redis: Exec, name: string): Promise<string | undefined> {
  const reply = await redis.exec(["CONFIG", "GET", name]);
  if (reply.kind !== "array") return undefined;
  const value = reply.value[1];
  return value && (value.kind === "bulk" || value.kind === "simple")
    ? value.value.toString()
    : undefined;
}

async function info(redis: Exec, section: string): Promise<string | undefined> {
  const reply: Reply = await redis.exec(["INFO", section]);
  return reply.kind === "bulk" ? reply.value.toString() : undefined;
}

function infoField(text: string | undefined, field: string): string | undefined {
  const m = text === undefined ? null : new RegExp(`^${field}:(.*)$`, "m").exec(text);
  return m?.[1]?.trim();
}

/**
 * The queue's guard against an unsafe Redis: checked at start (refused unless
 * STASHD_QUEUE_ALLOW_UNSAFE_REDIS), then every STASHD_QUEUE_STORE_CHECK_MS, since its config can
 * change while stashd runs (`CONFIG SET`, a failover to a differently configured replica, a
 * restart with another config file). While a check finds it unsafe, `refusal()` says why: the
 * queue answers writes 503 with it and /readyz is not ready, until a check finds it safe again.
 * A check that cannot reach Redis keeps the last verdict (readiness reports the outage itself).
 */
export class StoreSafety {
  private reason: string | undefined;
  private warned = "";
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly partitions: Partitions,
    private readonly opts: { allowUnsafe: boolean; everyMs: number },
    private readonly log: Logger,
  ) {}

  /** The start's check: throws a startup error naming the settings to change, or warns. */
  async checkAtStart(): Promise<void> {
    const found = await this.inspect();
    this.report(found);
    if (found.unsafe.length === 0 || this.opts.allowUnsafe) return;
    throw new AppError(
      "startup_failed",
      `the queue Redis may lose acknowledged messages: ${found.unsafe.join("; ")}. ` +
        "Fix its config, or set STASHD_QUEUE_ALLOW_UNSAFE_REDIS=true to run on it anyway " +
        "(an ephemeral Redis, e.g. in CI)",
    );
  }

  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.recheck().finally(() => (this.running = undefined));
    }, this.opts.everyMs);
    this.timer.unref();
  }

  /** Stops the periodic check and waits for one in progress. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** Why writes are refused now, or undefined. */
  refusal(): string | undefined {
    return this.reason;
  }

  /** Throws the 503 of a write while the store is unsafe. */
  assertWritable(): void {
    if (this.reason === undefined) return;
    throw new AppError(
      "backend_unavailable",
      `the queue refuses writes: its Redis may lose them (${this.reason})`,
    );
  }

  private async recheck(): Promise<void> {
    let found: StoreFindings;
    try {
      found = await this.inspect();
    } catch {
      return;
    }
    this.report(found);
    const reason =
      found.unsafe.length > 0 && !this.opts.allowUnsafe ? found.unsafe.join("; ") : undefined;
    if (reason === this.reason) return;
    if (reason) this.log.error("queue Redis became unsafe: refusing writes", { reason });
    else this.log.info("queue Redis is safe again: accepting writes");
    this.reason = reason;
  }

  /** Every partition's Redis (each master of a cluster holding queue keys). */
  private async inspect(): Promise<StoreFindings> {
    const all = await this.partitions.each((p) => inspectRedis(p.redis));
    return {
      unsafe: [...new Set(all.flatMap((f) => f.unsafe))],
      warnings: [...new Set(all.flatMap((f) => f.warnings))],
    };
  }

  /** Logs findings once per change, not at every check. */
  private report(found: StoreFindings): void {
    const lines = [...found.warnings, ...(this.opts.allowUnsafe ? found.unsafe : [])];
    const text = lines.join("; ");
    if (text === this.warned) return;
    this.warned = text;
    if (text === "") return;
    const note = this.opts.allowUnsafe && found.unsafe.length > 0;
    this.log.warn(
      note
        ? "queue Redis may lose acknowledged messages (allowed by STASHD_QUEUE_ALLOW_UNSAFE_REDIS)"
        : "queue Redis check",
      { findings: lines },
    );
  }
}
