import type { Arg } from "../resp.js";
import { keysOf, routingOf, type CommandTable } from "./commands.js";
import { hashSlot } from "./slot.js";

/**
 * Where one command goes in a cluster (docs/scaling.md, Redis Cluster):
 * - `slot`: the master owning the slot of its first key (Redis itself answers CROSSSLOT when
 *   the other keys hash elsewhere);
 * - `any`: keyless and node-local (PING, PUBLISH, EVAL with no keys…): the first master;
 * - `fanout`: keyless commands Redis tips as spanning the keyspace (`request_policy:all_shards`
 *   or `all_nodes`), run on every master (or every node) and merged by `response_policy`;
 * - `scan`: SCAN, walked master by master behind one cursor;
 * - `getkeys`: a key spec stashd cannot follow alone; the server's COMMAND GETKEYS decides.
 */
export type Route =
  | { kind: "slot"; slot: number; readonly: boolean }
  | { kind: "any"; readonly: boolean }
  | { kind: "fanout"; nodes: "masters" | "all"; response: string | undefined; name: string }
  | { kind: "scan" }
  | { kind: "getkeys"; readonly: boolean };

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
  const keys = keysOf(routing, argv);
  if (keys === undefined) return { kind: "getkeys", readonly };
  if (keys.length > 0) return { kind: "slot", slot: hashSlot(keys[0] as Arg), readonly };
  const { requestPolicy: request, responsePolicy: response } = routing;
  const spans = request === "all_shards" || request === "all_nodes";
  if (spans && (MERGEABLE.has(response) || name === "randomkey")) {
    return { kind: "fanout", nodes: request === "all_nodes" ? "all" : "masters", response, name };
  }
  return { kind: "any", readonly };
}

/** `get`, or `object|encoding` for a container command. */
export function commandName(argv: readonly Arg[]): string {
  const top = String(argv[0] ?? "").toLowerCase();
  const sub = argv[1] === undefined ? "" : String(argv[1]).toLowerCase();
  return ["acl", "script", "function", "config", "object", "client", "cluster"].includes(top) && sub
    ? `${top}|${sub}`
    : top;
}
