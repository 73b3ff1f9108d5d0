import { createHash } from "node:crypto";
import { AppError } from "../../shared/errors.js";
import type { RedisPool } from "../../shared/redis/pool.js";
import type { Arg, Reply } from "../../shared/redis/resp.js";
import { LUA_INCLUDES } from "./lua/includes.js";

/** A Lua transition as written in store/lua: name, declared key count, body. */
export interface LuaSource {
  readonly name: string;
  readonly numKeys: number;
  readonly body: string;
}

/** Bumped when a script changes incompatibly; part of each script's identity in Redis. */
const SCRIPT_VERSION = "1";

/**
 * A loaded script: called with EVALSHA, falling back to EVAL (which also caches it) on NOSCRIPT,
 * e.g. after the queue Redis restarted.
 */
export class Script {
  private readonly text: string;
  private readonly sha: string;

  constructor(readonly source: LuaSource) {
    this.text = `-- stashd ${source.name}:${SCRIPT_VERSION}\n${LUA_INCLUDES}\n${source.body}`;
    this.sha = createHash("sha1").update(this.text).digest("hex");
  }

  async run(pool: RedisPool, keys: readonly string[], args: readonly Arg[]): Promise<Reply> {
    if (keys.length !== this.source.numKeys) {
      throw new Error(`script ${this.source.name} takes ${this.source.numKeys} keys`);
    }
    const tail = [String(keys.length), ...keys, ...args];
    let reply = await pool.exec(["EVALSHA", this.sha, ...tail]);
    if (reply.kind === "error" && reply.value.startsWith("NOSCRIPT")) {
      reply = await pool.exec(["EVAL", this.text, ...tail]);
    }
    return checked(reply, this.source.name);
  }
}

/** Throws a Redis error reply as a 503-class AppError (the queue store failing is not user input). */
export function checked(reply: Reply, what: string): Reply {
  if (reply.kind === "error") {
    throw new AppError("backend_unavailable", `queue store error in ${what}: ${reply.value}`);
  }
  return reply;
}

export function asInt(reply: Reply): number {
  if (reply.kind === "int") return Number(reply.value);
  if (reply.kind === "bulk" || reply.kind === "simple") return Number(reply.value.toString());
  return 0;
}

export function asArray(reply: Reply): Reply[] {
  return reply.kind === "array" ? reply.value : [];
}

export function asBuffer(reply: Reply | undefined): Buffer | undefined {
  return reply && (reply.kind === "bulk" || reply.kind === "simple") ? reply.value : undefined;
}

export function asText(reply: Reply | undefined): string | undefined {
  return asBuffer(reply)?.toString("utf8");
}
