import { readFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { AppError } from "../../shared/errors.js";

/**
 * The console's built front end (`npm run build` → `dist/console/`, see scripts/build-console.mjs).
 * This module sits three levels below the package root both as source (`src/admin/console`) and
 * built (`dist/admin/console`), so the assets are found from either.
 */
export const ASSET_DIR = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "..",
  "..",
  "..",
  "dist",
  "console",
);

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".map": "application/json",
};

/**
 * The page's security policy: only this origin's scripts, styles and connections; no framing.
 * The bundle has no inline script, so nothing needs 'unsafe-inline'.
 */
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
  "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/** Files are read once and kept: the bundle is small (tens of KB) and never changes at run time. */
const cache = new Map<string, Buffer>();

function load(name: string): Buffer {
  let body = cache.get(name);
  if (!body) {
    try {
      body = readFileSync(path.join(ASSET_DIR, name));
    } catch {
      throw new AppError(
        "not_found",
        name === "index.html"
          ? "the console is not built: run `npm run build`"
          : `no console asset ${name}`,
      );
    }
    cache.set(name, body);
  }
  return body;
}

/** Serves `index.html` or one file under `assets/` (plain names only: no path traversal). */
export function sendAsset(res: ServerResponse, name: string, head: boolean): void {
  if (!/^[a-zA-Z0-9_-]+(\.[a-zA-Z0-9]+)+$/.test(name)) throw new AppError("not_found", "not found");
  const body = load(name);
  res.writeHead(200, {
    "content-type": TYPES[path.extname(name)] ?? "application/octet-stream",
    "content-length": body.length,
    "cache-control": name === "index.html" ? "no-cache" : "public, max-age=300",
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
  });
  res.end(head ? undefined : body);
}
