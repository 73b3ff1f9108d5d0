#!/usr/bin/env node
// Copies the Lua scripts (src/**/*.lua) next to the compiled modules in dist/, which load them
// relative to themselves (import.meta.url); tsc copies only TypeScript. Stale copies of deleted
// scripts are removed first. Run by `npm run build` and by setup.mjs after tsc.
import { cpSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

function luaFiles(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".lua"))
    .map((e) => path.join(e.parentPath ?? e.path, e.name));
}

/** Mirrors every .lua file under root/src into root/dist; returns how many were copied. */
export function copyLua(root) {
  const src = path.join(root, "src");
  const dist = path.join(root, "dist");
  mkdirSync(dist, { recursive: true });
  for (const file of luaFiles(dist)) rmSync(file);
  const files = luaFiles(src);
  for (const file of files) {
    const target = path.join(dist, path.relative(src, file));
    mkdirSync(path.dirname(target), { recursive: true });
    cpSync(file, target);
  }
  return files.length;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  copyLua(path.resolve(path.dirname(fileURLToPath(import.meta.url)), ".."));
}
