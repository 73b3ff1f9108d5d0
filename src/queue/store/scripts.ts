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
 * A script called with EVALSHA; on NOSCRIPT (a fresh or restarted queue Redis) it is loaded once
 * with SCRIPT LOAD and the call repeated.
 */
export class Script {
  private readonly text: string;
  private readonly sha: string;
  private loading: Promise<void> | undefined;

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
      await this.load(pool);
      reply = await pool.exec(["EVALSHA", this.sha, ...tail]);
    }
    return checked(reply, this.source.name);
  }

  /** One SCRIPT LOAD however many callers hit NOSCRIPT at once (a fresh or restarted Redis). */
  private load(pool: RedisPool): Promise<void> {
    this.loading ??= pool.exec(["SCRIPT", "LOAD", this.text]).then(
      (reply) => {
        this.loading = undefined;
        checked(reply, `${this.source.name} load`);
      },
      (err: unknown) => {
        this.loading = undefined;
        throw err;
      },
    );
    return this.loading;
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
