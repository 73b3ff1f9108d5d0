import type { Arg, Reply } from "../../shared/redis/resp.js";
import type { RedisPool } from "../../shared/redis/pool.js";
import { isNoScript, type LuaScript } from "../../shared/lua/script.js";
import type { CommandTable } from "../policy.js";
import { emulatesJson, jsonCommandName, routeJson, scriptFor, type JsonRoute } from "./route.js";

/**
 * JSON commands within one pipeline (or transaction). `rewrite` maps each JSON.* command to its
 * script call; `settle` fixes up the replies: a NOSCRIPT (script cache flushed since) is retried
 * with the script text, and ACL refusals name the JSON command rather than EVALSHA.
 *
 * Which scripts a backend already holds is remembered per pool owner (the database): until a
 * script is known to be cached, calls carry its text (EVAL), so a pipeline never reorders.
 * A retry after NOSCRIPT runs after the rest of its pipeline (only after a SCRIPT FLUSH).
 *
 * In a transaction (`transaction` = true) nothing can be retried inside EXEC, so the first call of
 * each script carries its text and later calls in the same MULTI use the SHA: they run after it,
 * on the same connection, when Redis already holds the script.
 */
const cached = new WeakMap<object, Set<string>>();

export class JsonBatch {
  private readonly routes = new Map<number, JsonRoute>();
  private readonly enabled: boolean;
  private readonly known: Set<string>;
  private readonly inBatch = new Set<string>();

  constructor(
    owner: object,
    table: CommandTable,
    private readonly transaction = false,
  ) {
    this.enabled = emulatesJson(table);
    let known = cached.get(owner);
    if (!known) cached.set(owner, (known = new Set()));
    this.known = known;
  }

  /** The script call for command i, an error reply, or undefined when argv is not ours. */
  rewrite(argv: Arg[], i: number): Arg[] | Reply | undefined {
    const name = this.enabled ? jsonCommandName(argv) : undefined;
    if (name === undefined) return undefined;
    const sha = scriptFor(name).sha;
    const by = (this.transaction ? this.inBatch.has(sha) : this.known.has(sha)) ? "sha" : "text";
    const route = routeJson(name, argv, by);
    if (!("argv" in route)) return route;
    this.inBatch.add(sha);
    this.routes.set(i, route);
    return route.argv;
  }

  /** Post-processes replies (indexed like the commands); retries NOSCRIPT items on `pool`. */
  async settle(replies: Reply[], commands: readonly Arg[][], pool: RedisPool): Promise<void> {
    for (const [i, route] of this.routes) {
      let reply = replies[i] as Reply;
      // Not inside a transaction: running the command again after EXEC would break atomicity.
      if (!this.transaction && isNoScript(reply)) {
        this.known.delete(route.script.sha);
        const again = routeJson(route.name, commands[i] as Arg[], "text");
        reply = "argv" in again ? await pool.exec(again.argv) : again;
      }
      if (reply.kind !== "error" || !reply.value.startsWith("NOPERM")) this.remember(route.script);
      replies[i] = renamed(reply, route.name);
    }
  }

  /** Renames ACL refusals in replies laid out with `offset` (1 for MULTI's queueing replies). */
  rename(replies: Reply[], offset: number): void {
    for (const [i, route] of this.routes) {
      const reply = replies[i + offset];
      if (reply) replies[i + offset] = renamed(reply, route.name);
    }
  }

  private remember(script: LuaScript): void {
    this.known.add(script.sha);
  }
}

/** ACL refusals of the script call name the JSON command the client sent. */
function renamed(reply: Reply, name: string): Reply {
  if (reply.kind !== "error" || !reply.value.startsWith("NOPERM")) return reply;
  return { kind: "error", value: reply.value.replace(/'(evalsha|eval)(_ro)?'/i, `'${name}'`) };
}
