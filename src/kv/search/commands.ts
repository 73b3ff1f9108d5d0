import type { Arg, Reply } from "../../shared/redis/resp.js";
import type { Principal } from "../databases/database.js";
import { aggregate } from "./aggregate.js";
import { contentOf, type Pairs } from "./content.js";
import { Deadline } from "./deadline.js";
import { pageTooLarge, SearchError } from "./errors.js";
import { readSources, type LiveIndex } from "./live-index.js";
import type { Source } from "./documents.js";
import {
  matchesOf,
  parseFilter,
  parseQueryOptions,
  rankedPage,
  type QueryOptions,
  type Ranked,
} from "./query.js";
import { errorReply, formatNumber, toReply, type Plain } from "./reply.js";
import { withLease, type Lease, type Steps } from "./scheduler.js";
import { describe, parseCreate, Words } from "./schema.js";
import type { Interrupts } from "../../shared/http/interrupts.js";
import { checkName, SearchService, type SearchHost } from "./service.js";

/**
 * The SEARCH.* commands, answered by the gateway itself (docs/search.md): the entry point that
 * gateway-commands.ts hands them to. The read-only token may query (QUERY, COUNT, AGGREGATE,
 * DESCRIBE, WAITINDEXING, LISTINDEXES, LISTALIASES) but not change indexes; ACL-user tokens are
 * refused every SEARCH command, since an index reads keys their ACL rules might hide.
 *
 * QUERY, COUNT and AGGREGATE compute under a lease of the process's scheduler (scheduler.ts):
 * a slice of the event loop at a time, a bounded number at once, refused when too many wait.
 */
/** `client` ends a query early when the request's client goes away (scheduler.ts). */
type Handler = (
  s: SearchService,
  words: Words,
  host: SearchHost,
  client?: Interrupts,
) => Promise<Plain>;

const WRITES = new Set([
  "search.create",
  "search.drop",
  "search.aliasadd",
  "search.aliasdel",
  "search.reindex",
]);

const HANDLERS: Record<string, Handler> = {
  "search.create": create,
  "search.drop": async (s, w) => s.drop(checkName(w.next("index name"))),
  "search.describe": describeIndex,
  "search.query": query,
  "search.count": countMatches,
  "search.aggregate": aggregateCommand,
  "search.waitindexing": waitIndexing,
  "search.reindex": reindex,
  "search.listindexes": async (s) => (await s.names()).sort(),
  "search.aliasadd": async (s, w) =>
    s.addAlias(checkName(w.next("alias")), checkName(w.next("index name"))),
  "search.aliasdel": async (s, w) => s.deleteAlias(checkName(w.next("alias"))),
  "search.listaliases": async (s) => (await s.aliases()).sort(([a], [b]) => (a < b ? -1 : 1)),
};

/** Whether argv is a SEARCH.* command the gateway serves. */
export function isSearchCommand(argv: readonly Arg[]): boolean {
  const name = argv[0];
  return name !== undefined && name.length > 7 && name.toString().toLowerCase() in HANDLERS;
}

const services = new WeakMap<SearchHost, SearchService>();

export function searchServiceOf(host: SearchHost): SearchService {
  let service = services.get(host);
  if (service === undefined) services.set(host, (service = new SearchService(host)));
  return service;
}

/** Stops the database's search feeds and timers (KvDatabase.close). */
export function closeSearch(host: SearchHost): void {
  services.get(host)?.close();
  services.delete(host);
}

export async function searchCommand(
  p: Principal,
  argv: Arg[],
  client?: Interrupts,
): Promise<Reply> {
  const name = (argv[0] as Arg).toString().toLowerCase();
  const upper = name.toUpperCase();
  if (p.role === "acl") return errorReply(`NOPERM ${upper} is not available to ACL-user tokens`);
  if (p.role === "readonly" && WRITES.has(name)) {
    return errorReply(`NOPERM this token is read-only: ${upper} changes an index`);
  }
  const handler = HANDLERS[name] as Handler;
  try {
    return toReply(await handler(searchServiceOf(p.db), new Words(argv.slice(1)), p.db, client));
  } catch (err) {
    if (err instanceof SearchError) return errorReply(err.message);
    throw err;
  }
}

async function create(s: SearchService, words: Words): Promise<Plain> {
  const args: string[] = [];
  while (words.more()) args.push(words.next("argument"));
  const { def, existsOk } = parseCreate(args);
  checkName(def.name);
  return s.create(def, existsOk);
}

async function describeIndex(s: SearchService, words: Words): Promise<Plain> {
  const index = await s.index(checkName(words.next("index name")));
  return index ? (describe(index.def, index.memory.size) as Plain) : null;
}

async function waitIndexing(s: SearchService, words: Words): Promise<Plain> {
  const index = await s.index(checkName(words.next("index name")));
  if (!index) return 0;
  await s.waitIndexing(index);
  return 1;
}

async function reindex(s: SearchService, words: Words): Promise<Plain> {
  const index = await s.index(checkName(words.next("index name")));
  if (!index) throw new SearchError("ERR no such index");
  await s.reindex(index);
  return "OK";
}

/** Runs `work` in slices under a lease, with the query's time budget (summed over slices). */
function computed<T>(
  host: SearchHost,
  client: Interrupts | undefined,
  work: (lease: Lease, deadline: Deadline) => Promise<T>,
): Promise<T> {
  const deadline = new Deadline(host.config.searchQueryTimeLimitMs);
  return withLease(host.config, "search", (lease) => work(lease, deadline), client);
}

async function countMatches(
  s: SearchService,
  words: Words,
  host: SearchHost,
  client?: Interrupts,
): Promise<Plain> {
  const index = await s.index(checkName(words.next("index name")));
  const filter = parseFilter(words.next("filter"));
  if (!index) return -1;
  const live = answering(index);
  return computed(host, client, async (lease, deadline) => {
    const { scores } = await lease.run(matchesOf(live.memory, filter, deadline), deadline);
    return scores.size;
  });
}

async function query(
  s: SearchService,
  words: Words,
  host: SearchHost,
  client?: Interrupts,
): Promise<Plain> {
  const index = await s.index(checkName(words.next("index name")));
  const filterText = words.next("filter");
  const rest: string[] = [];
  while (words.more()) rest.push(words.next("option"));
  const opts: QueryOptions = parseQueryOptions(filterText, rest, host.config.searchMaxLimit);
  if (!index) return null;
  const live = answering(index);
  return computed(host, client, async (lease, deadline) => {
    const page = await lease.run(rankedMatches(live, opts, deadline), deadline);
    if (opts.noContent) return page.ranked.map((r) => [r.key, formatNumber(r.score)]);
    const max = host.config.kvMaxReplyBytes;
    const keys = page.ranked.map((r) => r.key);
    const sources = await readSources(host.serverAdmin, live.def, keys, max);
    return lease.run(pageOf(live, page, sources, opts, max, deadline), deadline);
  });
}

/** The index, unless it cannot answer (it is full). */
function answering(index: LiveIndex): LiveIndex {
  if (index.failure) throw new SearchError(index.failure);
  return index;
}

interface MatchedPage {
  readonly ranked: Ranked[];
  readonly matched: Map<string, Set<string>>;
}

function* rankedMatches(
  index: LiveIndex,
  opts: QueryOptions,
  deadline: Deadline,
): Steps<MatchedPage> {
  const { scores, matched } = yield* matchesOf(index.memory, opts.filter, deadline);
  return { ranked: yield* rankedPage(index.memory, scores, opts, deadline), matched };
}

/** The page's `[key, score, content]` rows, a document at a time (HIGHLIGHT analyses text). */
function* pageOf(
  index: LiveIndex,
  page: MatchedPage,
  sources: readonly (Source | undefined)[],
  opts: QueryOptions,
  max: number,
  deadline: Deadline,
): Steps<Plain> {
  const out: Plain[] = [];
  let bytes = 0;
  for (let i = 0; i < page.ranked.length; i++) {
    if (deadline.due()) yield;
    const r = page.ranked[i] as Ranked;
    const source = sources[i];
    if (source === undefined) continue; // deleted since it was indexed
    const content: Pairs = contentOf(index.memory, source, opts, page.matched);
    for (const [field, value] of content) bytes += field.length + value.length + 48;
    out.push([r.key, formatNumber(r.score), content]);
  }
  // The page is built here, not by Redis: the gateway's reply bound applies to it too.
  if (bytes > max) throw pageTooLarge(max);
  return out;
}

async function aggregateCommand(
  s: SearchService,
  words: Words,
  host: SearchHost,
  client?: Interrupts,
): Promise<Plain> {
  const index = await s.index(checkName(words.next("index name")));
  const filter = parseFilter(words.next("filter"));
  const spec = parseFilter(words.next("aggregations"));
  if (!index) throw new SearchError("ERR no such index");
  const live = answering(index);
  return computed(host, client, (lease, deadline) =>
    lease.run(aggregated(live, filter, spec, deadline), deadline),
  );
}

function* aggregated(
  index: LiveIndex,
  filter: unknown,
  spec: unknown,
  deadline: Deadline,
): Steps<Plain> {
  const { scores } = yield* matchesOf(index.memory, filter, deadline);
  return yield* aggregate(index.memory, [...scores.keys()], spec, deadline);
}
