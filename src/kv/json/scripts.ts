import { createHash } from "node:crypto";
import { LUA_BIGINT } from "./lua-bigint.js";
import { LUA_CODEC } from "./lua-codec.js";
import { LUA_ENCODE } from "./lua-encode.js";
import { LUA_FILTER } from "./lua-filter.js";
import { LUA_PATH } from "./lua-path.js";
import { LUA_READ } from "./lua-read.js";
import { LUA_WRITE } from "./lua-write.js";
import { LUA_WRITE2 } from "./lua-write2.js";

/**
 * The JSON command group as two Redis Lua scripts with the same body: `write` (every command)
 * and `read` (`#!lua flags=no-writes`, read commands only, runnable with EVAL_RO/EVALSHA_RO by
 * the read-only token's ACL user). Called as `EVALSHA sha numkeys keys… json.<cmd> args…`.
 */
export interface JsonScript {
  readonly variant: "read" | "write";
  readonly text: string;
  readonly sha: string;
}

const BODY = [
  LUA_CODEC,
  LUA_ENCODE,
  LUA_BIGINT,
  LUA_PATH,
  LUA_FILTER,
  LUA_READ,
  LUA_WRITE,
  LUA_WRITE2,
].join("\n");

function script(variant: "read" | "write", shebang: string): JsonScript {
  const text = `${shebang}\nlocal READ_ONLY = ${variant === "read"}\n${BODY}`;
  return { variant, text, sha: createHash("sha1").update(text).digest("hex") };
}

export const READ_SCRIPT = script("read", "#!lua flags=no-writes");
export const WRITE_SCRIPT = script("write", "#!lua");
