import { randomUUID } from "node:crypto";
import { LuaScript } from "../../shared/lua/script.js";
import type { Arg, Reply } from "../../shared/redis/resp.js";
import type { Interrupts } from "../../shared/http/interrupts.js";
import type { Principal } from "../databases/database.js";
import { ID_PREFIX, logKeyOf, META_FIELD_COUNT } from "./keys.js";
import { Deadline } from "../search/deadline.js";
import { Refused, schedulerOf, withLease } from "../search/scheduler.js";
import { QueryTimeout } from "./local-index.js";
import {
  fp32Text,
  parseCreate,
  parseQuery,
  parseVector,
  toFp32Bytes,
  VectorSyntax,
} from "./parse.js";
import { CacheFull, fromFp32, IndexReadError, readMeta } from "./sync.js";
import { StillLoading, VectorStore } from "./store.js";
import { nearest } from "./search.js";

/**
 * Upstash's vector commands (VECTOR.CREATE, ADD, GET, QUERY, DEL, COUNT, INFO, DROP) served by
 * the gateway on any Redis (docs/vector.md). Writes run one Lua script (lua/vector-write.lua) on
 * the principal's pool, so Redis's ACLs apply as to any command; reads are plain HMGET / HGET /
 * HLEN; VECTOR.QUERY searches this process's copy of the index (store.ts), brought up to date
 * from Redis first, then computes a slice of the event loop at a time under a lease of the
 * process's scheduler (search/scheduler.ts), as SEARCH.QUERY does.
 */

const WRITE_SCRIPT = LuaScript.fromFile(new URL("./lua/vector-write.lua", import.meta.url));
/** VECTOR.DEL and VECTOR.DROP, flagged allow-oom: a full database can still delete. */
const DELETE_SCRIPT = LuaScript.fromFile(new URL("./lua/vector-delete.lua", import.meta.url));

/** Change-log entries kept per index (XADD MAXLEN ~): a copy further behind loads whole. */
const LOG_LENGTH = 10_000;

const stores = new WeakMap<Principal["db"], VectorStore>();

const errorReply = (value: string): Reply => ({ kind: "error", value });
const int = (n: number): Reply => ({ kind: "int", value: String(n) });
const bulk = (text: string): Reply => ({ kind: "bulk", value: Buffer.from(text) });
const NIL_ARRAY: Reply = { kind: "nil", array: true };
const NIL: Reply = { kind: "nil", array: false };

/** Whether argv is a VECTOR.* command (the gateway serves every one, known or not). */
export function isVectorCommand(argv: readonly Arg[]): boolean {
  const name = argv[0];
  return name !== undefined && name.length <= 16 && /^vector\./i.test(name.toString());
}

/** `client` ends a query early when the request's client goes away (search/scheduler.ts). */
type Handler = (p: Principal, index: string, rest: Arg[], client?: Interrupts) => Promise<Reply>;

/** Each command: its handler, how many arguments after the index it takes, and whether it writes. */
const COMMANDS: Record<string, { run: Handler; args: [number, number]; writes: boolean }> = {
  "vector.create": { run: create, args: [4, 5], writes: true },
  "vector.add": { run: add, args: [3, Infinity], writes: true },
  "vector.del": { run: del, args: [1, 1], writes: true },
  "vector.drop": { run: drop, args: [0, 0], writes: true },
  "vector.get": { run: get, args: [1, 1], writes: false },
  "vector.count": { run: count, args: [0, 0], writes: false },
  "vector.info": { run: info, args: [0, 0], writes: false },
  "vector.query": { run: query, args: [3, Infinity], writes: false },
};

/** The gateway handler of every VECTOR.* command (gateway-commands.ts). */
export async function vectorCommand(
  p: Principal,
  argv: Arg[],
  client?: Interrupts,
): Promise<Reply> {
  const name = (argv[0] as Arg).toString().toLowerCase();
  const command = COMMANDS[name];
  if (!command) return errorReply(`ERR unknown command '${name.toUpperCase()}'`);
  const [min, max] = command.args;
  const index = argv[1];
  const rest = argv.slice(2);
  if (index === undefined || rest.length < min || rest.length > max) {
    return errorReply(`ERR wrong number of arguments for '${name}' command`);
  }
  if (command.writes && p.role === "readonly") {
    return errorReply(`NOPERM the read-only token cannot run ${name.toUpperCase()}`);
  }
  try {
    return await command.run(p, index.toString(), rest, client);
  } catch (err) {
    if (err instanceof IndexReadError) return err.reply;
    if (
      err instanceof VectorSyntax ||
      err instanceof StillLoading ||
      err instanceof CacheFull ||
      err instanceof Refused
    ) {
      return errorReply(err.message);
    }
    if (err instanceof QueryTimeout) {
      return errorReply(
        `ERR VECTOR.QUERY ran past the limit of ${p.db.vectorSettings.queryTimeoutMs} ms (STASHD_KV_VECTOR_QUERY_TIMEOUT_MS)`,
      );
    }
    throw err;
  }
}

/** The log key, or a VectorSyntax for a name that cannot have one in its slot (keys.ts). */
function logOf(index: string): string {
  const log = logKeyOf(index);
  if (log === undefined) {
    throw new VectorSyntax(
      "ERR a vector index name with '}' needs a non-empty {hash tag} before it (docs/vector.md)",
    );
  }
  return log;
}

function write(p: Principal, index: string, args: Arg[]): Promise<Reply> {
  const script = args[0] === "del" || args[0] === "drop" ? DELETE_SCRIPT : WRITE_SCRIPT;
  return script.run(p.db.poolFor(p), [index, logOf(index)], args);
}

async function create(p: Principal, index: string, rest: Arg[]): Promise<Reply> {
  const req = parseCreate(rest, p.db.vectorSettings);
  const existsOk = req.existsOk ? "1" : "0";
  return write(p, index, ["create", String(req.dim), req.metric, existsOk, randomUUID()]);
}

async function add(p: Principal, index: string, rest: Arg[]): Promise<Reply> {
  const id = (rest[0] as Arg).toString();
  if (id === "") return errorReply("ERR vector id cannot be empty");
  const settings = p.db.vectorSettings;
  const [vector, end] = parseVector(rest, 1, settings.maxDimension);
  if (end !== rest.length) return errorReply("ERR syntax error after the vector");
  const budget = String(settings.maxIndexBytes);
  return write(p, index, ["add", id, toFp32Bytes(vector), budget, String(LOG_LENGTH)]);
}

async function del(p: Principal, index: string, rest: Arg[]): Promise<Reply> {
  return write(p, index, ["del", (rest[0] as Arg).toString(), String(LOG_LENGTH)]);
}

async function drop(p: Principal, index: string): Promise<Reply> {
  const reply = await write(p, index, ["drop"]);
  storeOf(p).forget(index);
  return reply;
}

async function get(p: Principal, index: string, rest: Arg[]): Promise<Reply> {
  const pool = p.db.poolFor(p);
  if (!(await readMeta(pool, index))) return NIL;
  const value = await pool.exec(["HGET", index, ID_PREFIX + (rest[0] as Arg).toString()]);
  if (value.kind !== "bulk") return value.kind === "error" ? value : NIL;
  return { kind: "array", value: Array.from(fromFp32(value.value), (x) => bulk(fp32Text(x))) };
}

async function count(p: Principal, index: string): Promise<Reply> {
  const pool = p.db.poolFor(p);
  const meta = await readMeta(pool, index);
  if (!meta) return int(0);
  const fields = await pool.exec(["HLEN", index]);
  return fields.kind === "int" ? int(Math.max(0, Number(fields.value) - META_FIELD_COUNT)) : fields;
}

async function info(p: Principal, index: string): Promise<Reply> {
  const pool = p.db.poolFor(p);
  const meta = await readMeta(pool, index);
  if (!meta) return NIL_ARRAY;
  return {
    kind: "array",
    value: [bulk("dimension"), int(meta.dim), bulk("metric"), bulk(meta.metric)],
  };
}

/**
 * The copy is brought up to date (waiting at most the query time limit), then searched in
 * slices: the search's own computing time is bounded by the same limit, summed over its slices.
 */
async function query(
  p: Principal,
  index: string,
  rest: Arg[],
  client?: Interrupts,
): Promise<Reply> {
  const settings = p.db.vectorSettings;
  const req = parseQuery(rest, settings);
  return withLease(
    p.db.config,
    "vector search",
    async (lease) => {
      const loadedBy = performance.now() + settings.queryTimeoutMs;
      const local = await storeOf(p).current(p.db.poolFor(p), index, logOf(index), loadedBy);
      if (!local) return { kind: "array", value: [] };
      if (req.vector.length !== local.dim) {
        return errorReply(
          `ERR query vector has ${req.vector.length} elements, the index has DIM ${local.dim}`,
        );
      }
      const budget = new Deadline(settings.queryTimeoutMs, () => new QueryTimeout());
      const hits = await lease.run(nearest(local, req, budget), budget);
      return {
        kind: "array",
        value: hits.map(({ id, score }) => ({
          kind: "array",
          value: [bulk(id), bulk(String(score))],
        })),
      };
    },
    client,
  );
}

function storeOf(p: Principal): VectorStore {
  let store = stores.get(p.db);
  if (!store) {
    store = new VectorStore(p.db.vectorSettings, schedulerOf(p.db.config));
    stores.set(p.db, store);
  }
  return store;
}
