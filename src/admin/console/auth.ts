import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { AppError } from "../../shared/errors.js";
import type { SessionRole } from "./sessions.js";

export const COOKIE = "stashd_console";
/** Custom header every mutating console call must carry (a cross-site form cannot send one). */
export const CSRF_HEADER = "x-stashd-console";

/**
 * Equal in constant time, whatever the lengths: both sides are hashed first, so neither the
 * content nor the length of the expected token leaks through timing.
 */
export function sameSecret(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b) && expected !== "";
}

/** Which role a login token stands for: the queue token, the console token, or neither. */
export function roleOfToken(
  given: string,
  queueToken: string,
  consoleToken: string | undefined,
): SessionRole | undefined {
  // Both comparisons always run, so the time taken does not tell which one matched.
  const queue = sameSecret(given, queueToken);
  const admin = consoleToken !== undefined && sameSecret(given, consoleToken);
  if (admin) return "console-token";
  return queue ? "queue-token" : undefined;
}

export function sessionIdOf(req: IncomingMessage): string | undefined {
  const header = req.headers.cookie ?? "";
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * The session cookie: HttpOnly (page scripts never see it), SameSite=Strict (never sent on
 * cross-site requests), scoped to /console. `Secure` is added when the request came over TLS
 * (directly or through a proxy that says so), since the admin listener itself speaks plain HTTP.
 */
export function sessionCookie(id: string, maxAgeMs: number, secure: boolean): string {
  const attrs = [
    `${COOKIE}=${id}`,
    "HttpOnly",
    "SameSite=Strict",
    "Path=/console",
    `Max-Age=${Math.floor(maxAgeMs / 1000)}`,
  ];
  if (secure) attrs.push("Secure");
  return attrs.join("; ");
}

export function clearedCookie(): string {
  return `${COOKIE}=; HttpOnly; SameSite=Strict; Path=/console; Max-Age=0`;
}

export function cameOverTls(req: IncomingMessage): boolean {
  const proto = req.headers["x-forwarded-proto"];
  return (
    ("encrypted" in req.socket && req.socket.encrypted === true) ||
    (typeof proto === "string" && proto.split(",")[0]?.trim() === "https")
  );
}

/** Refuses a mutating call without the console's custom header (CSRF defence). */
export function requireCsrfHeader(req: IncomingMessage): void {
  const method = req.method ?? "GET";
  if (method === "GET" || method === "HEAD") return;
  if (req.headers[CSRF_HEADER] !== "1") {
    throw new AppError(
      "forbidden",
      `console calls that change state need the ${CSRF_HEADER} header`,
    );
  }
}
