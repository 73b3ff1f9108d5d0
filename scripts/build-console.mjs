#!/usr/bin/env node
// Builds the web console (console/) into dist/console/: one minified ES module bundle (Preact
// included), one stylesheet and index.html. Run by `npm run build` and by scripts/setup.mjs, so
// `npm test`, `npm start` and `npm pack` always ship current assets; nothing is fetched at run time.
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const out = path.join(root, "dist", "console");
mkdirSync(out, { recursive: true });
await build({
  entryPoints: {
    app: path.join(root, "console", "src", "main.tsx"),
  },
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  jsx: "automatic",
  jsxImportSource: "preact",
  outdir: out,
  entryNames: "[name]",
  logLevel: "warning",
  legalComments: "none",
});
copyFileSync(path.join(root, "console", "index.html"), path.join(out, "index.html"));
copyFileSync(path.join(root, "console", "favicon.svg"), path.join(out, "favicon.svg"));
