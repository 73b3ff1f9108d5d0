import type { Arg, Reply } from "../resp.js";

/**
 * What cluster routing needs to know about each command, read from the server's own COMMAND
 * reply (never a hand-written list): where its keys are (key specs) and how Redis Cluster says
 * a keyless command is spread (the `request_policy` / `response_policy` tips).
 * See docs/scaling.md, Redis Cluster.
 */
export interface CommandRouting {
  specs: KeySpec[];
  /** The `readonly` flag: safe to send again after a connection died with it in flight. */
  readonly: boolean;
  /** `all_shards` (every master), `all_nodes` (replicas too), `special`, … */
  requestPolicy?: string;
  /** `agg_sum`, `all_succeeded`, `one_succeeded`, `special`, … */
  responsePolicy?: string;
  subcommands: Map<string, CommandRouting>;
}

type BeginSearch =
  | { type: "index"; index: number }
  | { type: "keyword"; keyword: string; startFrom: number }
  | { type: "unknown" };
type FindKeys =
  | { type: "range"; lastKey: number; keyStep: number; limit: number }
  | { type: "keynum"; keyNumIdx: number; firstKey: number; keyStep: number }
  | { type: "unknown" };

export interface KeySpec {
  begin: BeginSearch;
  find: FindKeys;
}

export type CommandTable = Map<string, CommandRouting>;

/** Parses the reply of `COMMAND` (or `COMMAND INFO …`). */
export function parseRoutingTable(reply: Reply): CommandTable {
  const table: CommandTable = new Map();
  if (reply.kind !== "array") return table;
  for (const entry of reply.value) {
    const parsed = parseEntry(entry);
    if (parsed) table.set(parsed[0], parsed[1]);
  }
  return table;
}

function parseEntry(entry: Reply): [string, CommandRouting] | undefined {
  if (entry.kind !== "array") return undefined;
  const [name, , flags, , , , , tips, specs, subs] = entry.value;
  const text = textOf(name);
  if (text === undefined) return undefined;
  const routing: CommandRouting = {
    specs: itemsOf(specs).map(parseKeySpec),
    readonly: itemsOf(flags).some((f) => textOf(f) === "readonly"),
    subcommands: new Map(),
  };
  for (const tip of itemsOf(tips).map(textOf)) {
    const [kind, value] = (tip ?? "").split(":");
    if (kind === "request_policy" && value) routing.requestPolicy = value;
    if (kind === "response_policy" && value) routing.responsePolicy = value;
  }
  for (const sub of itemsOf(subs)) {
    const parsed = parseEntry(sub);
    // Subcommands are named `container|sub`.
    if (parsed) routing.subcommands.set(parsed[0].split("|")[1] ?? parsed[0], parsed[1]);
  }
  return [text.toLowerCase(), routing];
}

function parseKeySpec(reply: Reply): KeySpec {
  const fields = mapOf(reply);
  const bs = mapOf(fields.get("begin_search"));
  const bsSpec = mapOf(bs.get("spec"));
  const fk = mapOf(fields.get("find_keys"));
  const fkSpec = mapOf(fk.get("spec"));
  const num = (m: Map<string, Reply>, k: string): number => Number(intOf(m.get(k)));
  let begin: BeginSearch = { type: "unknown" };
  if (textOf(bs.get("type")) === "index") begin = { type: "index", index: num(bsSpec, "index") };
  if (textOf(bs.get("type")) === "keyword") {
    const keyword = textOf(bsSpec.get("keyword")) ?? "";
    begin = {
      type: "keyword",
      keyword: keyword.toLowerCase(),
      startFrom: num(bsSpec, "startfrom"),
    };
  }
  let find: FindKeys = { type: "unknown" };
  if (textOf(fk.get("type")) === "range") {
    find = {
      type: "range",
      lastKey: num(fkSpec, "lastkey"),
      keyStep: num(fkSpec, "keystep"),
      limit: num(fkSpec, "limit"),
    };
  }
  if (textOf(fk.get("type")) === "keynum") {
    find = {
      type: "keynum",
      keyNumIdx: num(fkSpec, "keynumidx"),
      firstKey: num(fkSpec, "firstkey"),
      keyStep: num(fkSpec, "keystep"),
    };
  }
  return { begin, find };
}

/** The routing entry of a command line, descending into subcommands (`OBJECT ENCODING`, …). */
export function routingOf(table: CommandTable, argv: readonly Arg[]): CommandRouting | undefined {
  const top = table.get(String(argv[0] ?? "").toLowerCase());
  if (!top || top.subcommands.size === 0 || argv[1] === undefined) return top;
  return top.subcommands.get(String(argv[1]).toLowerCase()) ?? top;
}

/**
 * The keys of a command line by its key specs, the way Redis itself reads them; `undefined` when
 * a spec cannot be followed without running the command (`unknown` specs, e.g. SORT … STORE):
 * then ask the server with COMMAND GETKEYS.
 */
export function keysOf(routing: CommandRouting, argv: readonly Arg[]): Arg[] | undefined {
  return keyPositionsOf(routing, argv)?.map((i) => argv[i] as Arg);
}

/** Argument indexes of the keys (see keysOf). */
export function keyPositionsOf(
  routing: CommandRouting,
  argv: readonly Arg[],
): number[] | undefined {
  const positions: number[] = [];
  for (const spec of routing.specs) {
    const found = keyPositions(spec, argv);
    if (found === undefined) return undefined;
    positions.push(...found);
  }
  return positions;
}

function keyPositions(spec: KeySpec, argv: readonly Arg[]): number[] | undefined {
  const first = beginOf(spec.begin, argv);
  if (first === undefined || spec.find.type === "unknown") return undefined;
  if (first === null) return [];
  const argc = argv.length;
  let start = first;
  let last: number;
  let step: number;
  if (spec.find.type === "range") {
    const { lastKey, keyStep, limit } = spec.find;
    step = keyStep;
    if (lastKey >= 0) last = first + lastKey;
    else if (limit <= 1) last = argc + lastKey;
    else last = first + Math.floor((argc - first) / limit) + lastKey;
  } else {
    const count = Number(String(argv[first + spec.find.keyNumIdx] ?? ""));
    if (!Number.isInteger(count) || count < 0) return [];
    start = first + spec.find.firstKey;
    step = spec.find.keyStep;
    last = start + (count - 1) * step;
  }
  const out: number[] = [];
  for (let i = start; i <= last && i < argc; i += Math.max(1, step)) out.push(i);
  return out;
}

/** Index of the first key; null when the keyword is absent (no keys from this spec). */
function beginOf(begin: BeginSearch, argv: readonly Arg[]): number | null | undefined {
  if (begin.type === "unknown") return undefined;
  if (begin.type === "index") return begin.index;
  const argc = argv.length;
  const forward = begin.startFrom > 0;
  for (
    let i = forward ? begin.startFrom : argc + begin.startFrom;
    forward ? i < argc : i > 0;
    i += forward ? 1 : -1
  ) {
    if (String(argv[i]).toLowerCase() === begin.keyword) return i + 1;
  }
  return null;
}

function itemsOf(reply: Reply | undefined): Reply[] {
  return reply?.kind === "array" ? reply.value : [];
}

/** Text of a string reply (bulk or simple), or undefined for anything else. */
export function textOf(reply: Reply | undefined): string | undefined {
  return reply?.kind === "bulk" || reply?.kind === "simple" ? reply.value.toString() : undefined;
}

function intOf(reply: Reply | undefined): string {
  return reply?.kind === "int" ? reply.value : (textOf(reply) ?? "0");
}

/** A RESP2 flat map (`[k1, v1, k2, v2, …]`) as a Map. */
export function mapOf(reply: Reply | undefined): Map<string, Reply> {
  const map = new Map<string, Reply>();
  const items = itemsOf(reply);
  for (let i = 0; i + 1 < items.length; i += 2) {
    const key = textOf(items[i]);
    if (key !== undefined) map.set(key, items[i + 1] as Reply);
  }
  return map;
}
