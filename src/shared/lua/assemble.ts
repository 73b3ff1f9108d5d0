import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

/**
 * Assembles a Lua script from its `.lua` file and the include files it names.
 *
 * Directives are Lua comments, so every file stays valid Lua:
 * - `--@include name` is replaced, where it stands, by `includes/name.lua` (the `includes/` folder
 *   next to the script). An include may include others; each file is pulled in once per script,
 *   at its first mention, so a file lists what it needs and the order follows by itself.
 * - `--@keys a b c` (in the script file) names its KEYS in order; the loader checks each call
 *   passes that many. A script without it takes a variable number of keys.
 * A `#!lua` shebang stays on the first line, where Redis reads the script's flags.
 */
export interface AssembledLua {
  /** The script's name: its file name without `.lua`. */
  readonly name: string;
  readonly text: string;
  /** Declared KEYS names, or undefined when the script takes any number of keys. */
  readonly keys: readonly string[] | undefined;
  /** Names of the include files pulled in, in order. */
  readonly includes: readonly string[];
  /** Source of each line of `text` (index 0 = line 1): file path and line number. */
  readonly lines: readonly SourceLine[];
}

export interface SourceLine {
  readonly file: string;
  readonly line: number;
}

const INCLUDE = /^--@include\s+([\w-]+)\s*$/;
const KEYS = /^--@keys\s+(.*)$/;

export function assembleLua(file: string): AssembledLua {
  const includesDir = path.join(path.dirname(file), "includes");
  const out: string[] = [];
  const lines: SourceLine[] = [];
  const included: string[] = [];
  let keys: string[] | undefined;

  const emit = (text: string, source: SourceLine): void => {
    out.push(text);
    lines.push(source);
  };

  const expand = (current: string, isScript: boolean): void => {
    const text = readFileSync(current, "utf8").replace(/\n$/, "");
    for (const [i, line] of text.split("\n").entries()) {
      const source = { file: current, line: i + 1 };
      const include = INCLUDE.exec(line);
      const declared = KEYS.exec(line);
      if (isScript && declared) keys = (declared[1] ?? "").trim().split(/\s+/).filter(Boolean);
      if (!include) {
        emit(line, source);
        continue;
      }
      const name = include[1] ?? "";
      if (included.includes(name)) continue;
      const target = path.join(includesDir, `${name}.lua`);
      if (!existsSync(target)) throw new Error(`${current}:${i + 1}: no include ${target}`);
      included.push(name);
      emit(line, source);
      expand(target, false);
    }
  };

  expand(file, true);
  const name = path.basename(file, ".lua");
  const at = out[0]?.startsWith("#!") ? 1 : 0;
  out.splice(at, 0, `-- stashd: ${name}.lua with its includes`);
  lines.splice(at, 0, { file, line: 0 });
  return { name, text: out.join("\n"), keys, includes: included, lines };
}
