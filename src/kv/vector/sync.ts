import os from "node:os";
import { Deadline } from "../search/deadline.js";
import type { SliceScheduler, Steps } from "../search/scheduler.js";
import type { Arg, Reply } from "../../shared/redis/resp.js";
import { ID_PREFIX, META_DIM, META_GEN, META_METRIC, META_SEQ } from "./keys.js";
import { LocalIndex } from "./local-index.js";
import { METRICS, type Metric } from "./parse.js";

/**
 * Reading a vector index from Redis into a LocalIndex and keeping it current
 * (docs/vector.md, "Storage"). Redis is the only truth: every query first reads the index's
 * metadata (one HMGET); when its generation or write count (meta:seq) differs from the copy's,
 * the copy replays the change log from its last entry, reading each changed id's vector as it is
 * now, or loads the whole index again when the log has a gap (trimmed, or lost) or the index
 * was made anew. Reads only, so the read-only token's pool can do it.
 */

/** What runs the reads: the principal's pool. */
export interface Reader {
  exec(argv: readonly Arg[]): Promise<Reply>;
}

export interface IndexMeta {
  readonly dim: number;
  readonly metric: Metric;
  readonly gen: string;
  readonly seq: number;
}

/** Redis's error reply, or a WRONGTYPE for a key that holds something else. */
export class IndexReadError extends Error {
  constructor(readonly reply: Reply) {
    super(reply.kind === "error" ? reply.value : "vector index read failed");
  }
}

const WRONGTYPE: Reply = {
  kind: "error",
  value: "WRONGTYPE Operation against a key holding the wrong kind of value",
};

const text = (r: Reply | undefined): string | undefined =>
  r && (r.kind === "bulk" || r.kind === "simple") ? r.value.toString() : undefined;

const items = (r: Reply | undefined): Reply[] => (r?.kind === "array" ? r.value : []);

function check(reply: Reply): Reply {
  if (reply.kind === "error") throw new IndexReadError(reply);
  return reply;
}

/** The index's metadata; undefined when the key is missing; IndexReadError for another type. */
export async function readMeta(pool: Reader, name: string): Promise<IndexMeta | undefined> {
  const [dim, metric, gen, seq] = items(
    check(await pool.exec(["HMGET", name, META_DIM, META_METRIC, META_GEN, META_SEQ])),
  ).map(text);
  const known = METRICS.find((m) => m === metric);
  if (dim === undefined || known === undefined || gen === undefined) {
    const exists = check(await pool.exec(["EXISTS", name]));
    if (exists.kind === "int" && exists.value === "0") return undefined;
    throw new IndexReadError(WRONGTYPE);
  }
  return { dim: Number(dim), metric: known, gen, seq: Number(seq ?? 0) };
}

const LITTLE_ENDIAN = os.endianness() === "LE";

/**
 * FP32 little-endian bytes as a vector: one copy into an aligned buffer on a little-endian
 * machine (about 10 times faster than reading float by float, which a whole load of 100 000
 * vectors felt), else read element by element.
 */
export function fromFp32(bytes: Buffer): Float32Array {
  if (LITTLE_ENDIAN) {
    const end = bytes.byteOffset + (bytes.length & ~3);
    return new Float32Array(bytes.buffer.slice(bytes.byteOffset, end));
  }
  const out = new Float32Array(bytes.length >> 2);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readFloatLE(i * 4);
  return out;
}

/** Hash fields per HSCAN round trip of a whole load (about 1.5 MB of 384-dimension vectors). */
const SCAN_COUNT = 1000;

/** Progress of a whole load, for the "still loading" error. */
export interface LoadProgress {
  loaded: number;
}

/**
 * The whole index as it is in Redis now: its last log entry first, then every vector (HSCAN),
 * then the log replayed from that entry, so writes made during the scan are not missed.
 * `maxBytes` bounds what it may hold (STASHD_KV_VECTOR_CACHE_BYTES).
 */
export async function loadWhole(
  pool: Reader,
  name: string,
  log: string,
  meta: IndexMeta,
  maxBytes: number,
  progress: LoadProgress,
  scheduler: SliceScheduler,
): Promise<LocalIndex> {
  const local = new LocalIndex(meta.dim, meta.metric, meta.gen);
  const [last] = items(check(await pool.exec(["XREVRANGE", log, "+", "-", "COUNT", "1"])));
  [local.logId, local.seq] = last ? entryPosition(last) : ["0-0", meta.seq];
  let cursor = "0";
  do {
    const [next, pairs] = items(
      check(await pool.exec(["HSCAN", name, cursor, "COUNT", String(SCAN_COUNT)])),
    );
    cursor = text(next) ?? "0";
    const deadline = new Deadline(Infinity);
    await scheduler.background(stored(local, items(pairs), deadline), deadline);
    progress.loaded = local.count;
    if (local.bytes > maxBytes) throw new CacheFull(name, local.bytes, maxBytes);
  } while (cursor !== "0");
  return local;
}

/** Puts HSCAN's `[field, vector, …]` into the copy, yielding between vectors (big DIMs cost). */
function* stored(local: LocalIndex, flat: readonly Reply[], deadline: Deadline): Steps<void> {
  for (let i = 0; i + 1 < flat.length; i += 2) {
    if (deadline.due()) yield;
    const field = text(flat[i]) ?? "";
    const value = flat[i + 1];
    if (!field.startsWith(ID_PREFIX) || value?.kind !== "bulk") continue;
    local.upsert(field.slice(ID_PREFIX.length), fromFp32(value.value));
  }
}

/** A log entry's stream id and sequence number (its `n` field). */
function entryPosition(entry: Reply): [string, number] {
  const [id, fields] = items(entry);
  const flat = items(fields).map(text);
  const at = flat.indexOf("n");
  return [text(id) ?? "0-0", Number(at >= 0 ? flat[at + 1] : NaN)];
}

function entryId(entry: Reply): string | undefined {
  const flat = items(items(entry)[1]).map(text);
  const at = flat.indexOf("i");
  return at >= 0 ? flat[at + 1] : undefined;
}

/** Log entries read per round trip while catching up. */
const LOG_PAGE = 1000;

/**
 * Applies the log after the copy's position until it reaches `seq`. False on a gap (an entry
 * missing: trimmed past the copy, or the log deleted): the caller loads the index whole.
 */
export async function catchUp(
  pool: Reader,
  name: string,
  log: string,
  local: LocalIndex,
  seq: number,
  scheduler: SliceScheduler,
): Promise<boolean> {
  while (local.seq < seq) {
    const page = items(
      check(await pool.exec(["XRANGE", log, `(${local.logId}`, "+", "COUNT", String(LOG_PAGE)])),
    );
    if (page.length === 0) return false;
    const changed = new Set<string>();
    let [logId, n] = [local.logId, local.seq];
    for (const entry of page) {
      const [id, entrySeq] = entryPosition(entry);
      if (entrySeq !== n + 1) return false;
      [logId, n] = [id, entrySeq];
      const changedId = entryId(entry);
      if (changedId !== undefined) changed.add(changedId);
    }
    await applyCurrent(pool, name, local, [...changed], scheduler);
    [local.logId, local.seq] = [logId, n];
  }
  return true;
}

/** Reads the ids' vectors as they are now and puts them in the copy (absent ones removed). */
async function applyCurrent(
  pool: Reader,
  name: string,
  local: LocalIndex,
  ids: string[],
  scheduler: SliceScheduler,
): Promise<void> {
  for (let from = 0; from < ids.length; from += 500) {
    const chunk = ids.slice(from, from + 500);
    const values = items(
      check(await pool.exec(["HMGET", name, ...chunk.map((id) => ID_PREFIX + id)])),
    );
    const deadline = new Deadline(Infinity);
    await scheduler.background(current(local, chunk, values, deadline), deadline);
  }
}

/** Puts each id's vector as read now (HMGET's reply) into the copy, or removes the id. */
function* current(
  local: LocalIndex,
  ids: readonly string[],
  values: readonly Reply[],
  deadline: Deadline,
): Steps<void> {
  for (let i = 0; i < ids.length; i++) {
    if (deadline.due()) yield;
    const value = values[i];
    if (value?.kind === "bulk") local.upsert(ids[i] as string, fromFp32(value.value));
    else local.remove(ids[i] as string);
  }
}

/** An index's copy would not fit STASHD_KV_VECTOR_CACHE_BYTES. */
export class CacheFull extends Error {
  constructor(name: string, bytes: number, max: number) {
    super(
      `ERR vector index '${name}' needs more than ${max} bytes in memory to query (${bytes} so far; STASHD_KV_VECTOR_CACHE_BYTES)`,
    );
  }
}
