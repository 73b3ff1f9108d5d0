import { readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { assembleLua, type AssembledLua } from "../src/shared/lua/assemble.js";

/**
 * The Lua scripts of both services, for the linter (lint-lua.ts) and the tests: a script is a
 * `.lua` file directly in a `lua/` folder under src/ (src/queue/store/lua, src/kv/json/lua); its
 * includes are in `lua/includes/`.
 */
export const ROOT = fileURLToPath(new URL("..", import.meta.url));

function luaFiles(): string[] {
  return readdirSync(path.join(ROOT, "src"), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".lua"))
    .map((f) => path.join(ROOT, "src", f))
    .sort();
}

export function scriptFiles(): string[] {
  return luaFiles().filter((f) => path.basename(path.dirname(f)) === "lua");
}

export function includeFiles(): string[] {
  return luaFiles().filter((f) => path.basename(path.dirname(f)) === "includes");
}

export function assembledScripts(): AssembledLua[] {
  return scriptFiles().map(assembleLua);
}
