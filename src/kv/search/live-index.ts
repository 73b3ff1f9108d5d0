import type { RedisBackend } from "../../shared/redis/backend.js";
import type { RedisConnection } from "../../shared/redis/connection.js";
import { REPLY_TOO_LARGE, type Arg, type Reply } from "../../shared/redis/resp.js";
import { Deadline } from "./deadline.js";
import { indexedValues, sourceOf, type Source } from "./documents.js";
import { pageTooLarge, SearchError } from "./errors.js";
import { MemoryIndex } from "./memory-index.js";
import type { SliceScheduler, Steps } from "./scheduler.js";
import { coversKey, type IndexDef } from "./schema.js";

/**
 * One index kept current in this process: built by a SCAN of every master for the index's
 * prefixes, then fed the keys that keyspace notifications name (`changed`), which are read again
 * from Redis in batches (`flush`). A rescan repairs whatever notifications were lost. Redis is
 * the truth: every update is "read the key now and index what it holds (or drop it)".
 * Indexing runs on the process's scheduler a slice at a time, beside the queries (scheduler.ts),
 * and rescans of one index run one at a time: a rescan asked for while one runs waits for it and
 * runs once more for every caller that asked meanwhile.
 */
const READ_BATCH = 500;
const SCAN_COUNT = "1000";

export interface IndexSources {
  /** Reads documents by key (a cluster routes each to its master). */
  readonly reader: RedisBackend;
  /** Command connections to every master, for SCAN. */
  masters(): Promise<RedisConnection[]>;
  /** Where the indexing work computes. */
  readonly scheduler: SliceScheduler;
}

/** Indexing has no time limit of its own: it runs a slice at a time until done. */
const unbounded = (): Deadline => new Deadline(Infinity);

export class LiveIndex {
  readonly memory: MemoryIndex;
  private readonly dirty = new Set<string>();
  private flushing: Promise<void> | undefined;
  private runningScan: Promise<void> | undefined;
  private queuedScan: Promise<void> | undefined;
  /** The first build; queries wait for it. */
  ready: Promise<void> = Promise.resolve();
  /** Why the index cannot answer (it is full): queries answer this error. */
  failure: string | undefined;

  constructor(
    readonly def: IndexDef,
    private readonly sources: IndexSources,
    maxDocuments: number,
  ) {
    this.memory = new MemoryIndex(def, maxDocuments);
  }

  /** A notification named `key`: read it again soon. */
  changed(key: string): void {
    if (!coversKey(this.def, key)) return;
    this.dirty.add(key);
    this.flushing ??= Promise.resolve().then(() => this.flushLoop());
  }

  /** Resolves once every key marked so far has been read again and indexed. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private async flushLoop(): Promise<void> {
    try {
      while (this.dirty.size > 0) {
        const keys = [...this.dirty].slice(0, READ_BATCH);
        for (const k of keys) this.dirty.delete(k);
        await this.apply(keys);
      }
    } finally {
      this.flushing = undefined;
    }
  }

  /**
   * Scans every master for the prefixes and indexes what it finds; keys indexed before but not
   * found are read again (they may have been deleted, or written after the scan passed them).
   */
  rescan(): Promise<void> {
    if (this.queuedScan) return this.queuedScan;
    if (!this.runningScan) return this.startScan();
    // The running scan may have passed keys written before this call: one more follows it.
    const queued = this.runningScan
      .catch(() => undefined)
      .then(() => {
        this.queuedScan = undefined;
        return this.startScan();
      });
    this.queuedScan = queued;
    return queued;
  }

  private startScan(): Promise<void> {
    const run = this.scanAll().finally(() => {
      if (this.runningScan === run) this.runningScan = undefined;
    });
    this.runningScan = run;
    return run;
  }

  private async scanAll(): Promise<void> {
    const seen = new Set<string>();
    for (const conn of await this.sources.masters()) {
      for (const prefix of this.def.prefixes) {
        await this.scanPrefix(conn, prefix, seen);
      }
    }
    const deadline = unbounded();
    await this.sources.scheduler.background(this.markUnseen(seen, deadline), deadline);
    await this.flush();
    // A full index that has room again after a whole rescan holds every document: it answers.
    if (this.memory.size < this.memory.maxDocuments) this.failure = undefined;
  }

  private async scanPrefix(
    conn: RedisConnection,
    prefix: string,
    seen: Set<string>,
  ): Promise<void> {
    const match = `${prefix.replace(/[\\*?[\]]/g, "\\$&")}*`;
    const type =
      this.def.dataType === "HASH"
        ? ["TYPE", "hash"]
        : this.def.dataType === "STRING"
          ? ["TYPE", "string"]
          : [];
    let cursor = "0";
    do {
      const reply = await conn.send(["SCAN", cursor, "MATCH", match, "COUNT", SCAN_COUNT, ...type]);
      if (reply.kind !== "array")
        throw new Error(`SCAN failed: ${reply.kind === "error" ? reply.value : reply.kind}`);
      const [next, keys] = reply.value;
      cursor = next?.kind === "bulk" ? next.value.toString() : "0";
      const found =
        keys?.kind === "array"
          ? keys.value.map((k) => (k as { value: Buffer }).value.toString())
          : [];
      const fresh = found.filter((k) => !seen.has(k) && coversKey(this.def, k));
      for (const k of fresh) seen.add(k);
      for (let i = 0; i < fresh.length; i += READ_BATCH)
        await this.apply(fresh.slice(i, i + READ_BATCH));
    } while (cursor !== "0");
  }

  /** Keys indexed but not seen by the scan: read them again. */
  private *markUnseen(seen: Set<string>, deadline: Deadline): Steps<void> {
    for (const key of this.memory.keys()) {
      if (deadline.tick()) yield;
      if (!seen.has(key)) this.changed(key);
    }
  }

  /** Reads the keys now and indexes them (or drops those that are no longer documents). */
  private async apply(keys: string[]): Promise<void> {
    if (keys.length === 0) return;
    const sources = await readSources(this.sources.reader, this.def, keys);
    const deadline = unbounded();
    await this.sources.scheduler.background(this.indexed(keys, sources, deadline), deadline);
  }

  /** Puts or drops each document, yielding between documents once the slice is over. */
  private *indexed(
    keys: readonly string[],
    sources: readonly (Source | undefined)[],
    deadline: Deadline,
  ): Steps<void> {
    for (let i = 0; i < keys.length; i++) {
      if (deadline.due()) yield;
      const key = keys[i] as string;
      const source = sources[i];
      if (source === undefined) {
        this.memory.remove(key);
        continue;
      }
      try {
        this.memory.put(key, indexedValues(this.def, source));
      } catch (err) {
        if (!(err instanceof SearchError)) throw err;
        this.failure = err.message;
      }
    }
  }
}

/** The documents at `keys` (undefined where a key is missing or not of the index's type). */
export async function readSources(
  reader: RedisBackend,
  def: IndexDef,
  keys: readonly string[],
  maxBytes?: number,
): Promise<(Source | undefined)[]> {
  const read = (k: string): Arg[] => (def.dataType === "HASH" ? ["HGETALL", k] : ["GET", k]);
  const commands = keys.map(read);
  // With a budget (a query's page), replies past it become errors instead of being held.
  const replies =
    maxBytes === undefined
      ? await reader.execMany(commands)
      : (await reader.exchange(commands, { maxReplyBytes: maxBytes })).replies;
  const tooLarge = replies.find((r) => r.kind === "error" && r.value.startsWith(REPLY_TOO_LARGE));
  if (tooLarge && maxBytes !== undefined) throw pageTooLarge(maxBytes);
  // A JSON document on a Redis with the JSON module is not a string: JSON.GET reads it.
  const moduleJson = def.dataType === "JSON" ? wrongTypeIndexes(replies) : [];
  if (moduleJson.length > 0) {
    const again = await reader.execMany(
      moduleJson.map((i) => ["JSON.GET", keys[i] as string, "$"]),
    );
    moduleJson.forEach((i, j) => (replies[i] = again[j] as Reply));
  }
  return replies.map((r) => sourceOf(def.dataType, r));
}

function wrongTypeIndexes(replies: readonly Reply[]): number[] {
  const out: number[] = [];
  replies.forEach((r, i) => {
    if (r.kind === "error" && r.value.startsWith("WRONGTYPE")) out.push(i);
  });
  return out;
}
