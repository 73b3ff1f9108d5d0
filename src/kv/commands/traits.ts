/**
 * The one table of what the KV gateway does with a command because of its name, beside what the
 * backend's own COMMAND table says (flags, ACL categories and subcommands, which policy.ts reads
 * there). Every step of the guard chain (execute.ts) that treats a command by name takes its
 * names from here: the policy (policy.ts, `refusalOf`), the gateway-served commands
 * (gateway-commands.ts), the script-call watch (execute.ts), the read-only token's script
 * refusals (emulate/fcall-ro.ts) and the rewrites (rewrite.ts).
 *
 * The fast path (a `plain` command in execute.ts skips the policy and gateway steps) is derived
 * from the same table (`plainName` in policy.ts): a name with any trait whose step looks beyond
 * the name (`byName: false`) never takes it. So a new rule that reads a command's arguments, the
 * token or the database's options is a trait here with `byName: false`, and the fast path leaves
 * that command to the rule by construction (test/kv/fast-path-policy.test.ts checks it on random
 * commands).
 */
const TRAIT_STEPS = {
  /** Policy: a @connection command that is harmless on a shared connection. */
  "harmless-connection": { step: "policy", byName: true },
  /** Policy: a @pubsub command that does not put the connection into subscriber mode. */
  "publish-only": { step: "policy", byName: true },
  /** Policy, refused: changes connection state (some carry no @connection category). */
  "connection-state": { step: "policy", byName: true },
  /** Policy, refused: would stop, reconfigure or detach the backend every token shares. */
  "shared-server": { step: "policy", byName: true },
  /** Policy, refused: answered as an event stream (`/monitor`), never as a command. */
  "stream-only": { step: "policy", byName: true },
  /** Policy, refused: reaches another database number of the same Redis. */
  "cross-database": { step: "policy", byName: true },
  /** Policy, refused for its DEBUG subcommand: the Lua debugger takes the connection over. */
  "lua-debugger": { step: "policy", byName: false },
  /** Policy, refused with its DB option (COPY … DB n). */
  "cross-database-option": { step: "policy", byName: false },
  /** Policy, refused unless the database allows it (a per-database option). */
  "other-host": { step: "policy", byName: false },
  /** Policy, refused for the subcommands that would change the managed server's files. */
  "managed-config": { step: "policy", byName: false },
  /** Policy, refused when its arguments name one of stashd's own ACL users. */
  "reserved-users": { step: "policy", byName: false },
  /**
   * Policy, refused when its count argument asks for more elements than any reply may hold: a
   * negative count repeats picks, so the reply's size is the argument's, not the data's.
   */
  "counted-picks": { step: "policy", byName: false },
  /**
   * Policy, for the commands that carry a script's source (EVAL, EVAL_RO, SCRIPT LOAD): refused
   * when its shebang line quotes anything, which Redis unquotes (sdssplitargs) but rewrite.ts does
   * not, so a quoted `allow-oom` flag would reach Redis.
   */
  "script-source": { step: "policy", byName: false },
  /** Policy, refused past MAX_SORT_GETS GET patterns: each is a lookup per element (sort-patterns.ts). */
  "sort-patterns": { step: "policy", byName: false },
  /** Policy, refused when its offset would extend a string past the max record size. */
  "offset-write": { step: "policy", byName: false },
  /**
   * Policy, refused when it names one key many times: its work is the sum of its keys' sizes, so
   * repeating a key repeats a pass over it (positions in policy.ts, KEY_LISTS).
   */
  "summed-keys": { step: "policy", byName: false },
  /** Answered by the gateway itself for some arguments (gateway-commands.ts). */
  gateway: { step: "gateway", byName: false },
  /** Runs Lua: its waits are watched against the script time limit (script-killer.ts). */
  "script-call": { step: "watch", byName: false },
  /** Runs Lua: refused to the read-only token while STASHD_KV_READONLY_SCRIPTS is off. */
  "read-only-script": { step: "token", byName: false },
  /** `rewriteCommand` may change it (rewrite.ts); applied on the fast path too. */
  rewritten: { step: "rewrite", byName: true },
} as const satisfies Record<string, { step: string; byName: boolean }>;

export type Trait = keyof typeof TRAIT_STEPS;

/** Command name (lower-case) → its traits. */
const COMMAND_TRAITS: Readonly<Record<string, readonly Trait[]>> = {
  ping: ["harmless-connection"],
  echo: ["harmless-connection"],
  // COMMAND (COUNT, INFO, DOCS, GETKEYS…) only reads the server's command table.
  command: ["harmless-connection"],
  publish: ["publish-only"],
  spublish: ["publish-only"],
  pubsub: ["publish-only"],
  client: ["connection-state"],
  auth: ["connection-state"],
  select: ["connection-state"],
  hello: ["connection-state"],
  reset: ["connection-state"],
  quit: ["connection-state"],
  wait: ["connection-state"],
  waitaof: ["connection-state"],
  shutdown: ["shared-server"],
  debug: ["shared-server"],
  module: ["shared-server"],
  replicaof: ["shared-server"],
  slaveof: ["shared-server"],
  failover: ["shared-server"],
  sync: ["shared-server"],
  psync: ["shared-server"],
  replconf: ["shared-server"],
  cluster: ["shared-server"],
  readonly: ["shared-server"],
  readwrite: ["shared-server"],
  asking: ["shared-server"],
  monitor: ["stream-only"],
  swapdb: ["cross-database"],
  move: ["cross-database"],
  copy: ["cross-database-option"],
  migrate: ["other-host"],
  config: ["managed-config", "gateway"],
  acl: ["reserved-users", "gateway"],
  scan: ["gateway"],
  eval: ["script-call", "script-source", "rewritten"],
  evalsha: ["script-call", "rewritten"],
  eval_ro: ["script-call", "read-only-script", "script-source", "rewritten"],
  evalsha_ro: ["script-call", "read-only-script", "rewritten"],
  fcall: ["script-call"],
  fcall_ro: ["script-call", "read-only-script"],
  script: ["lua-debugger", "script-source", "rewritten"],
  function: ["rewritten"],
  xtrim: ["rewritten"],
  setrange: ["offset-write"],
  setbit: ["offset-write"],
  bitfield: ["offset-write"],
  hrandfield: ["counted-picks"],
  srandmember: ["counted-picks"],
  zrandmember: ["counted-picks"],
  sort: ["sort-patterns"],
  sort_ro: ["sort-patterns"],
  sunion: ["summed-keys"],
  sinter: ["summed-keys"],
  sdiff: ["summed-keys"],
  sunionstore: ["summed-keys"],
  sinterstore: ["summed-keys"],
  sdiffstore: ["summed-keys"],
  sintercard: ["summed-keys"],
  zunion: ["summed-keys"],
  zinter: ["summed-keys"],
  zdiff: ["summed-keys"],
  zunionstore: ["summed-keys"],
  zinterstore: ["summed-keys"],
  zdiffstore: ["summed-keys"],
  zintercard: ["summed-keys"],
  pfcount: ["summed-keys"],
  pfmerge: ["summed-keys"],
  bitop: ["summed-keys"],
  xread: ["summed-keys"],
  xreadgroup: ["summed-keys"],
  // Emulated in a script that parses each document named (json/lua): a repeat parses it again.
  "json.mget": ["summed-keys"],
  flushall: ["rewritten"],
  // Upstash's search engine, served by the gateway on any Redis (src/kv/search/).
  "search.create": ["gateway"],
  "search.drop": ["gateway"],
  "search.describe": ["gateway"],
  "search.query": ["gateway"],
  "search.count": ["gateway"],
  "search.aggregate": ["gateway"],
  "search.waitindexing": ["gateway"],
  "search.reindex": ["gateway"],
  "search.listindexes": ["gateway"],
  "search.aliasadd": ["gateway"],
  "search.aliasdel": ["gateway"],
  "search.listaliases": ["gateway"],
  // Upstash's vector engine, served by the gateway on any Redis (src/kv/vector/).
  "vector.create": ["gateway"],
  "vector.add": ["gateway"],
  "vector.del": ["gateway"],
  "vector.drop": ["gateway"],
  "vector.get": ["gateway"],
  "vector.count": ["gateway"],
  "vector.info": ["gateway"],
  "vector.query": ["gateway"],
};

const NO_TRAITS: readonly Trait[] = [];

/** The traits of a lower-case command name (none for most). */
export function traitsOf(name: string): readonly Trait[] {
  return Object.hasOwn(COMMAND_TRAITS, name) ? (COMMAND_TRAITS[name] ?? NO_TRAITS) : NO_TRAITS;
}

/** The lower-case names that have `trait`. */
export function namesWith(trait: Trait): ReadonlySet<string> {
  const names = Object.keys(COMMAND_TRAITS).filter((name) => traitsOf(name).includes(trait));
  return new Set(names);
}

/**
 * Whether every step that treats this name specially decides by the name alone: false when one
 * reads its arguments, the token or the database's options (the fast path must then leave the
 * command to that step).
 */
export function decidedByName(name: string): boolean {
  return traitsOf(name).every((t) => TRAIT_STEPS[t].byName);
}
