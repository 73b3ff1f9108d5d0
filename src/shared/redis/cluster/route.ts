import type { Arg } from "../resp.js";
import { keyPositionsOf, routingOf, type CommandRouting, type CommandTable } from "./commands.js";
import { hashSlot } from "./slot.js";

/**
 * Where one command goes in a cluster (docs/scaling.md, Redis Cluster):
 * - `slot`: the master owning the slot of its first key (Redis itself answers CROSSSLOT when
 *   the other keys hash elsewhere);
 * - `any`: keyless and node-local (PING, PUBLISH, EVAL with no keys…): the first master;
 * - `fanout`: keyless commands Redis tips as spanning the keyspace (`request_policy:all_shards`
 *   or `all_nodes`), run on every master (or every node) and merged by `response_policy`;
 * - `scan`: SCAN, walked master by master behind one cursor;
 * - `split`: a multi-key command Redis tips as `request_policy:multi_shard` (MGET, MSET, DEL,
 *   EXISTS, TOUCH, UNLINK) whose keys hash to several slots: one command per slot, merged back;
 * - `getkeys`: a key spec stashd cannot follow alone; the server's COMMAND GETKEYS decides.
 */
export type Route =
  | { kind: "slot"; slot: number; readonly: boolean }
  | { kind: "any"; readonly: boolean }
  | { kind: "fanout"; nodes: "masters" | "all"; response: string | undefined; name: string }
  | { kind: "scan" }
  | { kind: "split"; parts: SplitPart[]; response: string | undefined; keyCount: number }
  | { kind: "getkeys"; readonly: boolean };

/** One slot's share of a split multi-key command, and where its keys were in the original. */
export interface SplitPart {
  slot: number;
  argv: Arg[];
  /** Index of each key of `argv` among the original command's keys. */
  keyIndexes: number[];
}

/**
 * ACL users are per node and Redis gives ACL SETUSER/DELUSER no routing tip: stashd sends them to
 * every node so that read-only and ACL-user tokens are enforced wherever a command lands.
 */
const EVERY_NODE = new Set(["acl|setuser", "acl|deluser"]);
/** Response policies stashd knows how to merge (plus RANDOMKEY's `special`). */
const MERGEABLE = new Set([
  undefined,
  "all_succeeded",
  "one_succeeded",
  "agg_sum",
  "agg_min",
  "agg_max",
  "agg_logical_and",
  "agg_logical_or",
]);

export function routeOf(table: CommandTable, argv: readonly Arg[]): Route {
  const name = commandName(argv);
  if (name === "scan") return { kind: "scan" };
  if (EVERY_NODE.has(name))
    return { kind: "fanout", nodes: "all", response: "all_succeeded", name };
  const routing = routingOf(table, argv);
  const readonly = routing?.readonly ?? false;
  if (!routing) return { kind: "any", readonly };
  const positions = keyPositionsOf(routing, argv);
  if (positions === undefined) return { kind: "getkeys", readonly };
  const { requestPolicy: request, responsePolicy: response } = routing;
  if (positions.length > 0) {
    const slots = positions.map((i) => hashSlot(argv[i] as Arg));
    const split =
      request === "multi_shard" ? splitBySlot(routing, argv, positions, slots) : undefined;
    return split
      ? { kind: "split", parts: split, response, keyCount: positions.length }
      : { kind: "slot", slot: slots[0] as number, readonly };
  }
  const spans = request === "all_shards" || request === "all_nodes";
  if (spans && (MERGEABLE.has(response) || name === "randomkey")) {
    return { kind: "fanout", nodes: request === "all_nodes" ? "all" : "masters", response, name };
  }
  return { kind: "any", readonly };
}

/**
 * Parts of a multi_shard command, one per slot, each `[name, …the arguments of its keys]` (a key
 * and, for MSET, its value); undefined when every key is in one slot or the keys are not one
 * evenly stepped run at the end of the command.
 */
function splitBySlot(
  routing: CommandRouting,
  argv: readonly Arg[],
  positions: number[],
  slots: number[],
): SplitPart[] | undefined {
  if (slots.every((s) => s === slots[0]) || routing.specs.length !== 1) return undefined;
  const step = positions.length > 1 ? (positions[1] as number) - (positions[0] as number) : 1;
  const last = (positions[positions.length - 1] as number) + step;
  if (last !== argv.length) return undefined;
  const parts = new Map<number, SplitPart>();
  positions.forEach((pos, k) => {
    const slot = slots[k] as number;
    let part = parts.get(slot);
    if (!part) {
      part = { slot, argv: argv.slice(0, positions[0]), keyIndexes: [] };
      parts.set(slot, part);
    }
    part.argv.push(...argv.slice(pos, pos + step));
    part.keyIndexes.push(k);
  });
  return [...parts.values()];
}

/** `get`, or `object|encoding` for a container command. */
export function commandName(argv: readonly Arg[]): string {
  const top = String(argv[0] ?? "").toLowerCase();
  const sub = argv[1] === undefined ? "" : String(argv[1]).toLowerCase();
  return ["acl", "script", "function", "config", "object", "client", "cluster"].includes(top) && sub
    ? `${top}|${sub}`
    : top;
}
