import { textOf } from "./commands.js";
import type { Arg, Reply } from "../resp.js";
import type { ClusterBackend, Tally } from "./backend.js";
import type { Route } from "./route.js";
import type { ClusterNode } from "./topology.js";

/**
 * Keyless commands that span the keyspace, run on every master (or every node) and merged the
 * way Redis's `response_policy` tip says (docs/scaling.md, Redis Cluster): `agg_sum` adds
 * (DBSIZE), `all_succeeded` returns the first error or else the first reply (FLUSHDB, SCRIPT
 * LOAD, FUNCTION LOAD), `one_succeeded` the first success, `agg_min`/`agg_max`/`agg_logical_*`
 * combine integers (element-wise for arrays: SCRIPT EXISTS); without a policy, array replies
 * are concatenated (KEYS). RANDOMKEY picks one master's answer at random among those with keys.
 */
export async function fanOut(
  backend: ClusterBackend,
  argv: readonly Arg[],
  route: Extract<Route, { kind: "fanout" }>,
  tally: Tally,
): Promise<Reply> {
  const map = await backend.topology.map();
  const nodes = route.nodes === "all" ? [...map.masters, ...map.replicas] : map.masters;
  const replies = await Promise.all(
    nodes.map((node) =>
      backend
        .sendOn(node.addr, [argv], tally)
        .then((r) => r[0] as Reply)
        // A replica that is down must not fail ACL SETUSER or SCRIPT LOAD on the masters; it
        // catches up when it resyncs (ACL users: see docs/scaling.md).
        .catch((err: unknown) => {
          if (node.master) throw err;
          return undefined;
        }),
    ),
  );
  return merge(
    route,
    replies.filter((r): r is Reply => r !== undefined),
  );
}

function merge(route: Extract<Route, { kind: "fanout" }>, replies: Reply[]): Reply {
  const error = replies.find((r) => r.kind === "error");
  const first = replies[0] ?? { kind: "nil", array: false };
  if (route.name === "randomkey") {
    const found = replies.filter((r) => r.kind === "bulk");
    return found[Math.floor(Math.random() * found.length)] ?? first;
  }
  switch (route.response) {
    case "all_succeeded":
      return error ?? first;
    case "one_succeeded":
      return replies.find((r) => r.kind !== "error") ?? first;
    case "agg_sum":
    case "agg_min":
    case "agg_max":
    case "agg_logical_and":
    case "agg_logical_or":
      return error ?? aggregate(route.response, replies);
    default:
      if (error) return error;
      return replies.every((r) => r.kind === "array")
        ? { kind: "array", value: replies.flatMap((r) => (r.kind === "array" ? r.value : [])) }
        : first;
  }
}

export type Aggregate = "agg_sum" | "agg_min" | "agg_max" | "agg_logical_and" | "agg_logical_or";

export function aggregate(policy: Aggregate, replies: Reply[]): Reply {
  const first = replies[0];
  if (first?.kind === "array") {
    return {
      kind: "array",
      value: first.value.map((_, i) =>
        aggregate(
          policy,
          replies.map(
            (r) => (r.kind === "array" ? r.value[i] : undefined) ?? { kind: "int", value: "0" },
          ),
        ),
      ),
    };
  }
  const values = replies.map((r) => BigInt(r.kind === "int" ? r.value : 0));
  const combine = (a: bigint, b: bigint): bigint => {
    if (policy === "agg_sum") return a + b;
    if (policy === "agg_min") return a < b ? a : b;
    if (policy === "agg_max") return a > b ? a : b;
    if (policy === "agg_logical_and") return a !== 0n && b !== 0n ? 1n : 0n;
    return a !== 0n || b !== 0n ? 1n : 0n;
  };
  const result = values.reduce(combine);
  return { kind: "int", value: result.toString() };
}

/**
 * SCAN over all masters behind one cursor. The cursor stashd returns is `node + masters ×
 * nodeCursor` (decimal, as Redis's own): the low part says which master (in slot order) is being
 * walked, the high part is that master's own cursor. When a master is done and the call has
 * fewer keys than COUNT (default 10), the same call goes on with the next master, so a small
 * keyspace is scanned in one call as on a single Redis; 0 comes back after the last master.
 * MATCH, COUNT and TYPE apply per master. A reshard that changes the number of masters during
 * a walk can repeat or skip keys (see docs/scaling.md).
 */
export async function scanCluster(
  backend: ClusterBackend,
  argv: readonly Arg[],
  tally: Tally,
): Promise<Reply> {
  const map = await backend.topology.map();
  const count = BigInt(map.masters.length);
  const cursor = parseCursor(argv[1]);
  if (cursor === undefined) return { kind: "error", value: "ERR invalid cursor" };
  const wanted = countOption(argv);
  let index = cursor % count;
  let nodeCursor = cursor / count;
  const keys: Reply[] = [];
  for (;;) {
    const node = map.masters[Number(index)] as ClusterNode;
    const [reply] = await backend.sendOn(
      node.addr,
      [["SCAN", nodeCursor.toString(), ...argv.slice(2)]],
      tally,
    );
    if (!reply) return { kind: "array", value: [] };
    if (reply.kind !== "array") return reply;
    const [next, batch] = reply.value;
    if (batch?.kind === "array") keys.push(...batch.value);
    nodeCursor = parseCursor(next) ?? 0n;
    if (nodeCursor !== 0n) break;
    index += 1n;
    if (index === count || keys.length >= wanted) break;
  }
  const combined = index === count ? 0n : nodeCursor * count + index;
  return {
    kind: "array",
    value: [
      { kind: "bulk", value: Buffer.from(combined.toString()) },
      { kind: "array", value: keys },
    ],
  };
}

function parseCursor(arg: Arg | Reply | undefined): bigint | undefined {
  const text =
    arg === undefined
      ? ""
      : typeof arg === "string" || Buffer.isBuffer(arg)
        ? String(arg)
        : (textOf(arg) ?? "");
  if (!/^\d+$/.test(text)) return undefined;
  return BigInt(text);
}

function countOption(argv: readonly Arg[]): number {
  const at = argv.findIndex((a, i) => i > 1 && String(a).toLowerCase() === "count");
  const value = at > 0 ? Number(String(argv[at + 1])) : 10;
  return Number.isFinite(value) && value > 0 ? value : 10;
}
