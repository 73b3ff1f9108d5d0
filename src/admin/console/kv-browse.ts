import { AppError } from "../../shared/errors.js";
import { decodeBase64Result, kvCommands, resultOf } from "./upstream.js";

/** Keys per page of the browser. */
const PAGE = 100;
/** Largest SCAN COUNT of one step. */
const MAX_COUNT = 5000;
/** SCAN steps per page request at most, so a rare pattern on a big keyspace still answers soon. */
const MAX_SCAN_STEPS = 50;
/** Members shown per page of a hash, list, set, sorted set or stream. */
const MEMBERS = 100;
/** Longest string value sent to the browser; longer ones are cut (the length is reported). */
const MAX_STRING = 256 * 1024;

const TYPES = new Set(["string", "hash", "list", "set", "zset", "stream", "ReJSON-RL"]);

export interface KeyRow {
  key: string;
  type: string;
  /** Milliseconds left, -1 when persistent. */
  ttl: number;
  /** Bytes the key takes in Redis (MEMORY USAGE, sampled for big collections); null if unknown. */
  size: number | null;
}

export interface ScanPage {
  /** "0" when the scan is complete. */
  cursor: string;
  keys: KeyRow[];
  /**
   * Keys this request's SCAN steps visited, about (the sum of their COUNT hints, at most the
   * database's size): with a rare pattern many are visited for few matches.
   */
  scanned: number;
  /** The database's key count (DBSIZE) when the page was read. */
  total: number;
}

interface Db {
  kvUrl: string;
  token: string;
}

/**
 * One page of keys matching `match` (a SCAN glob) and `type`: SCAN steps until about a page is
 * found (a step may return somewhat more), the keyspace is done, or the step budget is spent;
 * then one pipeline asks the type and TTL of each key. Paging is SCAN's own cursor, so 100k keys
 * cost nothing up front.
 */
export async function scanKeys(
  db: Db,
  cursor: string,
  match: string,
  type: string,
): Promise<ScanPage> {
  if (!/^\d+$/.test(cursor)) throw new AppError("bad_request", "cursor must be a number");
  if (type !== "" && !TYPES.has(type)) throw new AppError("bad_request", `unknown type ${type}`);
  const found: string[] = [];
  let next = cursor;
  let visited = 0;
  // COUNT starts at a page and doubles while matches are sparse: a dense keyspace answers with
  // about one page, a rare pattern still walks quickly through a large keyspace.
  let count = PAGE;
  for (let step = 0; step < MAX_SCAN_STEPS; step++, count = Math.min(count * 2, MAX_COUNT)) {
    const args = ["SCAN", next, "MATCH", match || "*", "COUNT", String(count)];
    if (type) args.push("TYPE", type);
    const [reply] = await kvCommands(db.kvUrl, db.token, [args]);
    const [c, keys] = resultOf(reply) as [string, string[]];
    next = c;
    visited += count;
    found.push(...keys);
    if (next === "0" || found.length >= PAGE) break;
  }
  const [keys, size] = await Promise.all([
    describe(db, found),
    kvCommands(db.kvUrl, db.token, [["DBSIZE"]]),
  ]);
  const total = Number(resultOf(size[0]));
  return { cursor: next, keys, scanned: Math.min(visited, total), total };
}

async function describe(db: Db, keys: string[]): Promise<KeyRow[]> {
  if (keys.length === 0) return [];
  const replies = await kvCommands(
    db.kvUrl,
    db.token,
    keys.flatMap((k) => [
      ["TYPE", k],
      ["PTTL", k],
      ["MEMORY", "USAGE", k],
    ]),
  );
  return keys.map((key, i) => {
    const [t, ttl, size] = replies.slice(3 * i, 3 * i + 3);
    return {
      key,
      type: t && "result" in t ? String(t.result) : "none",
      ttl: ttl && "result" in ttl ? Number(ttl.result) : -1,
      size: size && "result" in size && size.result !== null ? Number(size.result) : null,
    };
  });
}

export interface KeyView {
  key: string;
  type: string;
  ttl: number;
  /** Length: bytes of a string, entries of a collection. */
  length: number;
  /** Where the next page of members starts ("0" or "" when there is none). */
  cursor: string;
  value: unknown;
  /**
   * Strings only: "utf8" when `value` is the text of the bytes (valid UTF-8), "hex" when the
   * bytes are not UTF-8 (binary) and `value` is their hex.
   */
  encoding?: "utf8" | "hex";
  /** Strings only: how many of the `length` bytes `value` holds (fewer when cut). */
  shownBytes?: number;
}

/**
 * A key's type, TTL, size and one page of its value. Strings come whole (up to 256 KiB); hashes
 * and sets page with HSCAN/SSCAN cursors; lists, sorted sets and streams by offset / entry id.
 */
export async function readKey(db: Db, key: string, cursor: string): Promise<KeyView> {
  const head = await kvCommands(db.kvUrl, db.token, [
    ["TYPE", key],
    ["PTTL", key],
  ]);
  const type = String(resultOf(head[0]));
  const ttl = Number(resultOf(head[1]));
  if (type === "none") throw new AppError("not_found", `no key ${key}`);
  if (type === "string") return { key, type, ttl, cursor: "", ...(await readString(db, key)) };
  const page = PAGES[type];
  if (!page) return { key, type, ttl, length: 0, cursor: "", value: null };
  // Collections are read base64-encoded, like strings, so members that are not UTF-8 arrive intact
  // (shown as hex); a JSON document is text by definition.
  const base64 = type !== "ReJSON-RL";
  const [len, body] = await kvCommands(db.kvUrl, db.token, page(key, cursor || "0"), { base64 });
  const length = Number(resultOf(len));
  const raw = base64 ? decodeMembers(resultOf(body)) : resultOf(body);
  const { value, next } = shape(type, raw, cursor || "0", length);
  return { key, type, ttl, length, cursor: next, value };
}

type PageCommands = (key: string, cursor: string) => string[][];

/**
 * A string's first MAX_STRING bytes, read base64-encoded so that binary survives the JSON: as
 * text when they are UTF-8 (a character cut at the end by the limit is dropped whole), as hex
 * otherwise. `length` is STRLEN (bytes), `shownBytes` what `value` holds.
 */
async function readString(
  db: Db,
  key: string,
): Promise<Pick<KeyView, "length" | "value" | "encoding" | "shownBytes">> {
  const [len, range] = await kvCommands(
    db.kvUrl,
    db.token,
    [
      ["STRLEN", key],
      ["GETRANGE", key, "0", String(MAX_STRING - 1)],
    ],
    { base64: true },
  );
  const length = Number(resultOf(len));
  const bytes = decodeBase64Result(resultOf(range));
  const text = utf8Prefix(bytes, bytes.length < length);
  if (text === undefined) {
    return { length, value: bytes.toString("hex"), encoding: "hex", shownBytes: bytes.length };
  }
  return { length, value: text.text, encoding: "utf8", shownBytes: text.bytes };
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A member of a collection: its text when UTF-8, else `{hex}` of its bytes. */
export type Member = string | { hex: string };

/**
 * A reply read with base64, each string decoded: UTF-8 becomes text, anything else `{hex}`
 * (a hash field, set or sorted-set member, list item or stream field that is binary).
 */
function decodeMembers(reply: unknown): unknown {
  if (Array.isArray(reply)) return reply.map(decodeMembers);
  if (typeof reply !== "string") return reply;
  const bytes = decodeBase64Result(reply);
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return { hex: bytes.toString("hex") } satisfies Member;
  }
}

/**
 * The text of `bytes` if they are UTF-8, with how many bytes it covers; when `cut`, up to three
 * trailing bytes of a character the cut split are left out. Undefined for non-UTF-8 (binary).
 */
function utf8Prefix(bytes: Buffer, cut: boolean): { text: string; bytes: number } | undefined {
  for (let drop = 0; drop <= (cut ? 3 : 0) && drop <= bytes.length; drop++) {
    const part = bytes.subarray(0, bytes.length - drop);
    try {
      return { text: strictUtf8.decode(part), bytes: part.length };
    } catch {
      // Not UTF-8 (yet): when cut, try without the last byte.
    }
  }
  return undefined;
}

const PAGES: Record<string, PageCommands> = {
  hash: (k, c) => [
    ["HLEN", k],
    ["HSCAN", k, c, "COUNT", String(MEMBERS)],
  ],
  set: (k, c) => [
    ["SCARD", k],
    ["SSCAN", k, c, "COUNT", String(MEMBERS)],
  ],
  list: (k, c) => [
    ["LLEN", k],
    ["LRANGE", k, c, String(Number(c) + MEMBERS - 1)],
  ],
  zset: (k, c) => [
    ["ZCARD", k],
    ["ZRANGE", k, c, String(Number(c) + MEMBERS - 1), "WITHSCORES"],
  ],
  stream: (k, c) => [
    ["XLEN", k],
    ["XRANGE", k, c === "0" ? "-" : `(${c}`, "+", "COUNT", String(MEMBERS)],
  ],
  "ReJSON-RL": (k) => [
    ["EXISTS", k],
    ["JSON.GET", k, "$"],
  ],
};

function shape(
  type: string,
  raw: unknown,
  cursor: string,
  length: number,
): { value: unknown; next: string } {
  switch (type) {
    case "hash":
    case "set": {
      const [next, items] = raw as [string, Member[]];
      return { value: type === "hash" ? pairs(items) : items, next };
    }
    case "list": {
      const start = Number(cursor);
      const items = raw as Member[];
      const end = start + items.length;
      return { value: items, next: end < length ? String(end) : "" };
    }
    case "zset": {
      const start = Number(cursor);
      const items = pairs(raw as Member[]);
      const end = start + items.length;
      return { value: items, next: end < length ? String(end) : "" };
    }
    case "stream": {
      const entries = (raw as [string, Member[]][]).map(([id, fields]) => [id, pairs(fields)]);
      const last = entries[entries.length - 1];
      return { value: entries, next: entries.length === MEMBERS && last ? String(last[0]) : "" };
    }
    default:
      return { value: raw, next: "" };
  }
}

function pairs(flat: Member[]): [Member, Member][] {
  const out: [Member, Member][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i] as Member, flat[i + 1] as Member]);
  return out;
}
