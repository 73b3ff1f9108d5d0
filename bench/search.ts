/**
 * SEARCH benchmark: `node --expose-gc --import tsx bench/search.ts [--docs N --queries N --smoke]`.
 *
 * In one run, on one synthetic corpus (default 100 000 documents: a title of 3-8 and a body of
 * 20-40 words drawn Zipf-like from 5 000 made-up words, a price, one of 20 categories):
 * - stashd (in this process, on a redis-server started here): the initial scan of an index over
 *   documents already in Redis (documents/s until SEARCH.WAITINDEXING returns), the incremental
 *   path (10 % more documents written after the index exists, until WAITINDEXING), the heap the
 *   index takes, and the latency of SEARCH.QUERY over HTTP (term, phrase, fuzzy, numeric range)
 *   and SEARCH.AGGREGATE (terms + avg), sequential, p50 and p99;
 * - SQLite FTS5 (better-sqlite3, in memory) on the same corpus and queries: insert time and the
 *   same query kinds (fuzzy as FTS5 has none: the fts5vocab terms within one edit, OR-ed).
 * `--smoke` runs 2 000 documents and 20 queries of each kind (no speed is asserted).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import type BetterSqlite from "better-sqlite3";
import { RedisConnection, parseRedisUrl } from "../src/shared/redis/connection.js";
import { start } from "../src/index.js";
import { editDistance } from "../src/kv/search/terms.js";
import { freePort, startRedis } from "../test/harness/redis.js";

/**
 * better-sqlite3 lives in bench/.deps, installed by `node scripts/setup.mjs --with-bench` (it
 * compiles SQLite offline, which the project's own install should not pay for).
 */
const Database = createRequire(new URL("./.deps/package.json", import.meta.url))(
  "better-sqlite3",
) as typeof BetterSqlite;

const flag = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const smoke = process.argv.includes("--smoke");
const DOCS = Number(flag("--docs")) || (smoke ? 2_000 : 100_000);
const QUERIES = Number(flag("--queries")) || (smoke ? 20 : 200);

// ---- corpus ----

let seed = 42;
const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const SYLLABLES = [
  "ka",
  "lo",
  "mi",
  "ne",
  "ru",
  "sa",
  "ti",
  "vo",
  "pe",
  "da",
  "ri",
  "mu",
  "zo",
  "fe",
  "gi",
  "ba",
];
const WORDS = Array.from({ length: 5_000 }, (_, i) => {
  let w = "";
  for (let n = i + 16; n > 0; n = Math.floor(n / 16)) w += SYLLABLES[n % 16];
  return w;
});
/** Zipf-like: low indexes much more often. */
const word = (): string => WORDS[Math.floor(WORDS.length * rand() ** 3)] as string;
const words = (min: number, max: number): string =>
  Array.from({ length: min + Math.floor(rand() * (max - min + 1)) }, word).join(" ");

interface Doc {
  title: string;
  body: string;
  price: number;
  category: string;
}
const corpus: Doc[] = Array.from({ length: DOCS }, () => ({
  title: words(3, 8),
  body: words(20, 40),
  price: Math.round(rand() * 100_000) / 100,
  category: `cat${Math.floor(rand() * 20)}`,
}));

// ---- query sets (the same for both engines) ----

const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)] as T;
const termWords = Array.from(
  { length: QUERIES },
  () => WORDS[50 + Math.floor(rand() * 500)] as string,
);
const phrases = Array.from({ length: QUERIES }, () =>
  pick(corpus).body.split(" ").slice(3, 5).join(" "),
);
const typos = Array.from({ length: QUERIES }, () => {
  const w = WORDS[Math.floor(rand() * 1000)] as string;
  return `${w.slice(0, 2)}${w.slice(3)}`; // one deletion
});
const ranges = Array.from({ length: QUERIES }, () => {
  const from = Math.floor(rand() * 900);
  return [from, from + 10] as const;
});

// ---- helpers ----

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

async function timed<T>(
  items: readonly T[],
  run: (item: T) => unknown,
): Promise<{ p50: number; p99: number }> {
  const times: number[] = [];
  for (const item of items) {
    const t = process.hrtime.bigint();
    await run(item);
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

const rows: string[] = [];
const row = (what: string, stashd: string, sqlite: string): void => {
  rows.push(`| ${what} | ${stashd} | ${sqlite} |`);
};
const ms = (r: { p50: number; p99: number }): string =>
  `${r.p50.toFixed(2)} / ${r.p99.toFixed(2)} ms`;
const heapMb = (): number => {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed / 1e6;
};

// ---- stashd ----

async function benchStashd(): Promise<Record<string, string>> {
  const redis = await startRedis(
    flag("--redis-log") ? ["--logfile", flag("--redis-log") as string] : [],
    await freePort(),
  );
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-bench-search-"));
  const stashd = await start({
    dataDir,
    kvPort: 0,
    host: "127.0.0.1",
    services: ["kv"],
    logLevel: "warn",
    kvRedisUrl: redis.url,
    searchQueryTimeLimitMs: 60_000,
    env: {},
  });
  const call = async (...args: string[]): Promise<unknown> => {
    const res = await fetch(stashd.kv.url, {
      method: "POST",
      headers: { authorization: `Bearer ${stashd.kv.token}` },
      body: JSON.stringify(args),
    });
    const body = (await res.json()) as { result?: unknown; error?: string };
    if (body.error !== undefined) throw new Error(body.error);
    return body.result;
  };
  const direct = await RedisConnection.open(parseRedisUrl(redis.url), 5_000);
  const write = async (from: number, to: number): Promise<void> => {
    for (let i = from; i < to; i += 1000) {
      const batch = corpus.slice(i, Math.min(to, i + 1000)).map((d, j) => {
        const fields = [
          "title",
          d.title,
          "body",
          d.body,
          "price",
          String(d.price),
          "category",
          d.category,
        ];
        return ["HSET", `doc:${i + j}`, ...fields];
      });
      await direct.sendMany(batch);
    }
  };
  const out: Record<string, string> = {};
  try {
    const initial = Math.floor(DOCS * 0.9);
    await write(0, initial);
    const heapBefore = heapMb();
    let t = Date.now();
    await call(
      "SEARCH.CREATE",
      "docs",
      "ON",
      "HASH",
      "PREFIX",
      "1",
      "doc:",
      "SCHEMA",
      "title",
      "TEXT",
      "body",
      "TEXT",
      "price",
      "F64",
      "category",
      "KEYWORD",
      "FAST",
    );
    await call("SEARCH.WAITINDEXING", "docs");
    out.scan = `${Math.round(initial / ((Date.now() - t) / 1000))} docs/s (${initial} docs in ${((Date.now() - t) / 1000).toFixed(1)} s)`;
    t = Date.now();
    await write(initial, DOCS);
    await call("SEARCH.WAITINDEXING", "docs");
    out.incremental = `${Math.round((DOCS - initial) / ((Date.now() - t) / 1000))} docs/s`;
    out.heap = `${(heapMb() - heapBefore).toFixed(0)} MB heap for ${DOCS} docs`;
    out.term = ms(
      await timed(termWords, (w) =>
        call("SEARCH.QUERY", "docs", JSON.stringify({ body: { $eq: w } }), "LIMIT", "10"),
      ),
    );
    out.phrase = ms(
      await timed(phrases, (p) =>
        call("SEARCH.QUERY", "docs", JSON.stringify({ body: { $phrase: p } }), "LIMIT", "10"),
      ),
    );
    out.fuzzy = ms(
      await timed(typos, (w) =>
        call(
          "SEARCH.QUERY",
          "docs",
          JSON.stringify({ title: { $fuzzy: { value: w, distance: 1 } } }),
          "LIMIT",
          "10",
        ),
      ),
    );
    out.range = ms(
      await timed(ranges, ([a, b]) =>
        call("SEARCH.QUERY", "docs", JSON.stringify({ price: { $gte: a, $lt: b } }), "LIMIT", "10"),
      ),
    );
    const aggs = JSON.stringify({
      by: { $terms: { field: "category", size: 20 }, $aggs: { p: { $avg: { field: "price" } } } },
    });
    out.aggregate = ms(
      await timed(termWords, (w) =>
        call("SEARCH.AGGREGATE", "docs", JSON.stringify({ body: { $eq: w } }), aggs),
      ),
    );
    out.count = String(await call("SEARCH.COUNT", "docs", "{}"));
  } finally {
    direct.destroy();
    await stashd.stop();
    await redis.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return out;
}

// ---- SQLite FTS5 ----

async function benchSqlite(): Promise<Record<string, string>> {
  const db = new Database(":memory:");
  db.function("lev", { deterministic: true }, (a: unknown, b: unknown) =>
    editDistance(String(a), String(b), true, false),
  );
  db.exec(`CREATE VIRTUAL TABLE fts USING fts5(title, body);
           CREATE VIRTUAL TABLE vocab USING fts5vocab(fts, 'row');
           CREATE TABLE meta(id INTEGER PRIMARY KEY, price REAL, category TEXT);
           CREATE INDEX meta_price ON meta(price);`);
  const out: Record<string, string> = {};
  const t = Date.now();
  const insertFts = db.prepare("INSERT INTO fts(rowid, title, body) VALUES (?, ?, ?)");
  const insertMeta = db.prepare("INSERT INTO meta(id, price, category) VALUES (?, ?, ?)");
  db.transaction(() => {
    corpus.forEach((d, i) => {
      insertFts.run(i, d.title, d.body);
      insertMeta.run(i, d.price, d.category);
    });
  })();
  out.scan = `${Math.round(DOCS / ((Date.now() - t) / 1000))} docs/s (insert, one transaction)`;
  const match = db.prepare(
    "SELECT rowid, title, body FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT 10",
  );
  out.term = ms(await timed(termWords, (w) => match.all(`body:${w}`)));
  out.phrase = ms(await timed(phrases, (p) => match.all(`body:"${p}"`)));
  const near = db.prepare("SELECT term FROM vocab WHERE lev(term, ?) <= 1 LIMIT 50");
  out.fuzzy = ms(
    await timed(typos, (w) => {
      const terms = (near.all(w) as { term: string }[]).map((r) => `title:${r.term}`);
      return terms.length === 0 ? [] : match.all(terms.join(" OR "));
    }),
  );
  const range = db.prepare(
    "SELECT m.id, f.title FROM meta m JOIN fts f ON f.rowid = m.id WHERE m.price >= ? AND m.price < ? LIMIT 10",
  );
  out.range = ms(await timed(ranges, ([a, b]) => range.all(a, b)));
  const agg = db.prepare(
    "SELECT m.category, count(*), avg(m.price) FROM fts f JOIN meta m ON m.id = f.rowid WHERE fts MATCH ? GROUP BY m.category ORDER BY count(*) DESC LIMIT 20",
  );
  out.aggregate = ms(await timed(termWords, (w) => agg.all(`body:${w}`)));
  db.close();
  return out;
}

const stashd = await benchStashd();
const sqlite = await benchSqlite();
console.log(
  `search bench: ${DOCS} documents, ${QUERIES} queries per kind, load ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}, ${os.cpus().length} cores`,
);
console.log("| measure | stashd SEARCH (HTTP, p50 / p99) | SQLite FTS5 (in process, p50 / p99) |");
console.log("| --- | --- | --- |");
row("indexing: initial scan", stashd.scan as string, sqlite.scan as string);
row("indexing: incremental (notifications)", stashd.incremental as string, "-");
row("index memory", stashd.heap as string, "-");
for (const kind of ["term", "phrase", "fuzzy", "range", "aggregate"]) {
  row(`query: ${kind}`, stashd[kind] as string, sqlite[kind] as string);
}
console.log(rows.join("\n"));
console.log(`documents indexed: ${stashd.count}`);
process.exit(0);
