// Lints every Lua script as Redis receives it: assembled with its includes (a function of an
// include is checked where a script uses it, with that script's locals in scope). luacheck's
// findings are reported at the line of the .lua file they come from. Also fails on include files
// no script uses. Part of `npm run check`; needs luacheck (Debian: lua-check; setup installs it).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { AssembledLua } from "../src/shared/lua/assemble.js";
import { ROOT, assembledScripts, includeFiles } from "./lua-catalog.js";

function lint(scripts: readonly AssembledLua[], dir: string): string[] {
  const byFile = new Map<string, AssembledLua>();
  for (const [i, s] of scripts.entries()) {
    const file = path.join(dir, `${i}-${s.name}.lua`);
    writeFileSync(file, s.text);
    byFile.set(file, s);
  }
  const config = path.join(ROOT, ".luacheckrc");
  const args = ["--config", config, "--formatter", "plain", "--codes", ...byFile.keys()];
  const result = spawnSync("luacheck", args, { encoding: "utf8" });
  if (result.error) {
    throw new Error(`luacheck could not run (${result.error.message}); npm run setup installs it`);
  }
  const findings = result.stdout.split("\n").filter(Boolean);
  if (result.status !== 0 && findings.length === 0) throw new Error(result.stderr);
  return findings.map((line) => {
    const m = /^(.*?):(\d+):(\d+): (.*)$/.exec(line);
    const s = m && byFile.get(m[1] ?? "");
    const source = s?.lines[Number(m?.[2]) - 1];
    if (!m || !s || !source) return line;
    const where = `${path.relative(ROOT, source.file)}:${source.line}:${m[3]}`;
    return `${where}: ${m[4]} (in script ${s.name})`;
  });
}

function unusedIncludes(scripts: readonly AssembledLua[]): string[] {
  const used = new Set(scripts.flatMap((s) => s.lines.map((l) => l.file)));
  return includeFiles()
    .filter((f) => !used.has(f))
    .map((f) => `${path.relative(ROOT, f)}: no script includes it`);
}

const scripts = assembledScripts();
const dir = mkdtempSync(path.join(os.tmpdir(), "stashd-luacheck-"));
try {
  const problems = [...new Set([...lint(scripts, dir), ...unusedIncludes(scripts)])];
  for (const p of problems) process.stderr.write(`${p}\n`);
  if (problems.length > 0) process.exit(1);
  process.stderr.write(`lint-lua: ${scripts.length} scripts clean\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
