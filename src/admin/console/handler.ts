import type { IncomingMessage, ServerResponse } from "node:http";
import type { DatabaseCredentials } from "../../kv/databases/database-manager.js";
import { AppError } from "../../shared/errors.js";
import { readBody } from "../../shared/http/body.js";
import { decodePathSegment } from "../../shared/http/path.js";
import { sendError, sendJson } from "../../shared/http/respond.js";
import { FailureThrottle } from "../../shared/failure-throttle.js";
import type { Logger } from "../../shared/log.js";
import { sendAsset } from "./assets.js";
import {
  cameOverTls,
  clearedCookie,
  requireCsrfHeader,
  roleOfToken,
  sessionCookie,
  sessionIdOf,
} from "./auth.js";
import type { QueueDepth } from "../../queue/store/depth.js";
import { readKey, scanKeys } from "./kv-browse.js";
import type { DataSize } from "./kv-data-size.js";
import { parseEdit, runEdit } from "./kv-edit.js";
import { deleteMatching, planDelete, treeLevel } from "./kv-namespaces.js";
import type { ChartsAnswer } from "./charts.js";
import { listMessages, messagePage, queueGetter } from "./messages.js";
import { pendingQuery, type PendingIds, type PendingNow, type PendingQuery } from "./pending.js";
import { SessionStore } from "./sessions.js";
import { summarize } from "./summary.js";
import { callApi, kvCommands } from "./upstream.js";

export interface ConsoleDeps {
  /** Base URL of the queue API (QSTASH_URL), e.g. http://127.0.0.1:8080. */
  queueUrl: string;
  /** The queue token as of now (it may be reset while running). */
  queueToken: () => string;
  /** Base URL of the KV REST API. */
  kvUrl: string;
  /** The KV databases and their tokens, from the registry (read only). */
  databases: () => DatabaseCredentials[];
  /**
   * A database's key count (DBSIZE) read on stashd's own connection, so the console's polling is
   * not counted among the database's commands on the Charts page.
   */
  dbSize: (name: string) => Promise<number>;
  /** A database's memory used and its limit (kv-data-size.ts), on stashd's own connection. */
  dataSize: (name: string) => Promise<DataSize>;
  /** STASHD_CONSOLE_TOKEN: a second login token besides the queue token. */
  consoleToken?: string | undefined;
  /** Queue depth for the live counts (optional: without it those counts are not shown). */
  queueDepth?: (() => Promise<QueueDepth>) | undefined;
  /** What is pending now, by state (pending.ts); without it the Pending page says it is off. */
  pendingNow?: ((q: PendingQuery) => Promise<PendingNow>) | undefined;
  /** The ids of the pending messages matching filters (pending.ts), for a bulk cancel. */
  pendingIds?: ((q: URLSearchParams) => Promise<PendingIds>) | undefined;
  /** The charts' points, every worker's added up (charts.ts); without it, 404. */
  charts?: (() => Promise<ChartsAnswer>) | undefined;
  /** Idle time after which a session ends. */
  sessionTtlMs: number;
  /** Budgets of failed logins (STASHD_CONSOLE_LOGIN_*); see login(). */
  loginThrottle: { perAddress: number; global: number; windowMs: number };
  logger: Logger;
}

export type ConsoleHandler = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

const PREFIX = "/console";
/** Largest body the console accepts (a publish body or a KV value edited in the browser). */
const MAX_BODY = 10 * 1024 * 1024;
/**
 * Largest login body: `{"token": …}` with room for any token. A login is read before anyone is
 * known, so a stranger's 10 MB logins were each held whole before the 401 (50 at once: 568 MiB).
 */
const LOGIN_MAX_BODY = 4096;
/** Most commands one command-box or edit call may run. */
const MAX_COMMANDS = 100;

interface Call {
  req: IncomingMessage;
  res: ServerResponse;
  method: string;
  /** Path after /console, e.g. "/api/kv/default/scan". */
  path: string;
  query: URLSearchParams;
  rawQuery: string;
  /** When the request reached the console (performance.now()), for its Server-Timing. */
  startedAt: number;
}

/**
 * The web console (docs/console.md): a login page and app bundle, and a JSON API under
 * /console/api that calls the queue and KV public APIs with tokens held here. Every API call but
 * login needs a session cookie; every mutating one also the CSRF header. Resolves false (and
 * touches nothing) when the path is not under /console, so a listener can try it first.
 */
export function createConsoleHandler(deps: ConsoleDeps): ConsoleHandler {
  const sessions = new SessionStore(deps.sessionTtlMs);
  const throttle = new FailureThrottle({
    perKey: deps.loginThrottle.perAddress,
    global: deps.loginThrottle.global,
    windowMs: deps.loginThrottle.windowMs,
    what: "console login",
  });
  return async (req, res) => {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    if (path !== PREFIX && !path.startsWith(`${PREFIX}/`)) return false;
    const rawQuery = q === -1 ? "" : url.slice(q + 1);
    const call: Call = {
      req,
      res,
      method: (req.method ?? "GET").toUpperCase(),
      path: path.slice(PREFIX.length),
      query: new URLSearchParams(rawQuery),
      rawQuery,
      startedAt: performance.now(),
    };
    try {
      await route(deps, sessions, throttle, call);
    } catch (err) {
      if (!req.complete) req.resume();
      sendError(res, err, deps.logger, { "cache-control": "no-store", ...serverTiming(call) });
    }
    return true;
  };
}

async function route(
  deps: ConsoleDeps,
  sessions: SessionStore,
  throttle: FailureThrottle,
  c: Call,
): Promise<void> {
  if (!c.path.startsWith("/api/")) return serveStatic(c);
  requireCsrfHeader(c.req);
  if (c.path === "/api/login" && c.method === "POST") return login(deps, sessions, throttle, c);
  const id = sessionIdOf(c.req);
  if (!sessions.touch(id)) throw new AppError("unauthorized", "log in first");
  if (c.path === "/api/logout" && c.method === "POST") {
    sessions.delete(id);
    return json(c, 200, { ok: true }, { "set-cookie": clearedCookie() });
  }
  if (c.path === "/api/session" && c.method === "GET") {
    return json(c, 200, { databases: deps.databases().map((d) => d.name) });
  }
  if (c.path === "/api/summary" && c.method === "GET") {
    return json(c, 200, await summarize(summarySources(deps)));
  }
  if (c.path.startsWith("/api/queue/")) return proxyQueue(deps, c);
  if (c.path.startsWith("/api/messages") && c.method === "GET") return messageRoute(deps, c);
  if (c.path.startsWith("/api/pending") && c.method === "GET") return pendingRoute(deps, c);
  if (c.path === "/api/charts" && c.method === "GET") {
    c.req.resume();
    if (!deps.charts) throw new AppError("not_found", "no charts here");
    return json(c, 200, await deps.charts());
  }
  const kv = /^\/api\/kv\/([^/]+)\/(scan|key|exec|edit|tree|delete-matching)$/.exec(c.path);
  if (kv) return kvRoute(deps, c, decodePathSegment(kv[1] ?? ""), kv[2] ?? "");
  throw new AppError("not_found", `no console API ${c.method} ${c.path}`);
}

/** The message-centric views (messages.ts): the list, and one message's page. */
async function messageRoute(deps: ConsoleDeps, c: Call): Promise<void> {
  c.req.resume();
  const get = queueGetter(deps.queueUrl, deps.queueToken);
  if (c.path === "/api/messages") return json(c, 200, await listMessages(get, c.query));
  const one = /^\/api\/messages\/([^/]+)$/.exec(c.path);
  if (!one) throw new AppError("not_found", `no console API ${c.method} ${c.path}`);
  json(c, 200, await messagePage(get, decodePathSegment(one[1] ?? "")));
}

/** What is pending now (pending.ts): the counts and rows, or the ids matching filters. */
async function pendingRoute(deps: ConsoleDeps, c: Call): Promise<void> {
  c.req.resume();
  const { pendingNow, pendingIds } = deps;
  if (!pendingNow || !pendingIds) throw new AppError("not_found", "no queue store here");
  if (c.path === "/api/pending") return json(c, 200, await pendingNow(pendingQuery(c.query)));
  if (c.path === "/api/pending/ids") return json(c, 200, await pendingIds(c.query));
  throw new AppError("not_found", `no console API ${c.method} ${c.path}`);
}

function serveStatic(c: Call): void {
  c.req.resume();
  if (c.method !== "GET" && c.method !== "HEAD") {
    throw new AppError("method_not_allowed", "use GET");
  }
  const head = c.method === "HEAD";
  if (c.path === "" || c.path === "/") return sendAsset(c.res, "index.html", head);
  const asset = /^\/assets\/([^/]+)$/.exec(c.path);
  if (!asset) throw new AppError("not_found", "not found");
  sendAsset(c.res, asset[1] ?? "", head);
}

/**
 * A login: failed ones are counted per client address (the socket's: a forwarded-for header could
 * be forged) and for all addresses together; past either budget every login, right or wrong, is
 * answered 429 with Retry-After until the window ends, without comparing the token. The
 * comparison itself stays constant-time (roleOfToken).
 */
async function login(
  deps: ConsoleDeps,
  sessions: SessionStore,
  throttle: FailureThrottle,
  c: Call,
): Promise<void> {
  const address = c.req.socket.remoteAddress ?? "unknown";
  throttle.check(address);
  const body = await readJson(c, LOGIN_MAX_BODY);
  const token = typeof body["token"] === "string" ? body["token"] : "";
  const role = roleOfToken(token, deps.queueToken(), deps.consoleToken);
  if (!role) {
    throttle.fail(address);
    throw new AppError("unauthorized", "wrong token");
  }
  throttle.succeed(address);
  const id = sessions.create(role);
  const cookie = sessionCookie(id, deps.sessionTtlMs, cameOverTls(c.req));
  json(c, 200, { ok: true }, { "set-cookie": cookie });
}

function summarySources(deps: ConsoleDeps) {
  return {
    queueUrl: deps.queueUrl,
    queueToken: deps.queueToken(),
    databases: deps.databases(),
    dbSize: deps.dbSize,
    dataSize: deps.dataSize,
    queueDepth: deps.queueDepth,
  };
}

/** Request headers passed on to the queue API: the body's type and the `Upstash-*` options. */
function forwardedHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value !== "string") continue;
    if (name === "content-type" || name.startsWith("upstash-")) out[name] = value;
  }
  return out;
}

/**
 * /console/api/queue/<path> → the queue API's /v2/<path> with the queue token: the browser speaks
 * the QStash v2 API (docs/qstash-protocol.md) without ever holding the token.
 */
async function proxyQueue(deps: ConsoleDeps, c: Call): Promise<void> {
  const rest = c.path.slice("/api/queue/".length);
  const hasBody = c.method !== "GET" && c.method !== "HEAD";
  const body = hasBody ? await readBody(c.req, MAX_BODY, tooLarge) : undefined;
  if (!hasBody) c.req.resume();
  const target = `${deps.queueUrl}/v2/${rest}${c.rawQuery ? `?${c.rawQuery}` : ""}`;
  const reply = await callApi(target, deps.queueToken(), {
    method: c.method,
    headers: forwardedHeaders(c.req),
    ...(body && body.length > 0 ? { body } : {}),
  });
  c.res.writeHead(reply.status, {
    "content-type": reply.contentType,
    "content-length": reply.body.length,
    "cache-control": "no-store",
    ...serverTiming(c),
  });
  c.res.end(reply.body);
}

async function kvRoute(deps: ConsoleDeps, c: Call, name: string, action: string): Promise<void> {
  const creds = deps.databases().find((d) => d.name === name);
  if (!creds) throw new AppError("not_found", `no database named ${name}`);
  const db = { kvUrl: deps.kvUrl, token: creds.token };
  if (action === "scan" && c.method === "GET") {
    c.req.resume();
    const page = await scanKeys(
      db,
      c.query.get("cursor") || "0",
      c.query.get("match") ?? "*",
      c.query.get("type") ?? "",
    );
    return json(c, 200, page);
  }
  if (action === "key" && c.method === "GET") {
    c.req.resume();
    const key = c.query.get("key");
    if (key === null) throw new AppError("bad_request", "key is required");
    return json(c, 200, await readKey(db, key, c.query.get("cursor") ?? "0"));
  }
  if (action === "exec" && c.method === "POST") return exec(deps, c, creds);
  if (action === "edit" && c.method === "POST") {
    // The browser's own edits, compared before they write, with the standard token (kv-edit.ts).
    return json(c, 200, { wrote: await runEdit(db, parseEdit(await readJson(c))) });
  }
  if (action === "tree" && c.method === "GET") {
    c.req.resume();
    const separator = c.query.get("separator") ?? ":";
    return json(c, 200, await treeLevel(db, c.query.get("prefix") ?? "", separator));
  }
  if (action === "delete-matching" && c.method === "POST") {
    // `{"match": glob, "dryRun": true}` counts (the number the page asks to confirm); without
    // dryRun it deletes. Both with the standard token: the console's own edits use it.
    const body = await readJson(c);
    const match = body["match"];
    if (typeof match !== "string") throw new AppError("bad_request", "match must be a string");
    const result =
      body["dryRun"] === true ? await planDelete(db, match) : await deleteMatching(db, match);
    return json(c, 200, result);
  }
  throw new AppError("method_not_allowed", `${c.method} is not allowed on ${action}`);
}

/**
 * Runs commands on a database: `{"commands": [["GET","k"], ...], "token": "readonly"|"standard"}`
 * → `{"results": [{"result"}|{"error"}, ...]}`. The read-only token is the default, so the
 * command box cannot write unless the user picks the standard token; the browser's own edits
 * (set a field, change a TTL…) ask for the standard one.
 */
async function exec(deps: ConsoleDeps, c: Call, creds: DatabaseCredentials): Promise<void> {
  const body = await readJson(c);
  const commands = body["commands"];
  const valid =
    Array.isArray(commands) &&
    commands.length > 0 &&
    commands.length <= MAX_COMMANDS &&
    commands.every(
      (cmd) =>
        Array.isArray(cmd) && cmd.length > 0 && cmd.every((a: unknown) => typeof a === "string"),
    );
  if (!valid) {
    throw new AppError(
      "bad_request",
      `commands must be 1-${MAX_COMMANDS} non-empty arrays of strings`,
    );
  }
  const token = body["token"] === "standard" ? creds.token : creds.readonlyToken;
  const results = await kvCommands(deps.kvUrl, token, commands as string[][]);
  json(c, 200, { results });
}

async function readJson(c: Call, limit = MAX_BODY): Promise<Record<string, unknown>> {
  const raw = await readBody(c.req, limit, () => tooLarge(limit));
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString("utf8") || "{}");
  } catch {
    throw new AppError("bad_request", "body must be JSON");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new AppError("bad_request", "body must be a JSON object");
  }
  return parsed as Record<string, unknown>;
}

function tooLarge(limit = MAX_BODY): AppError {
  return new AppError("payload_too_large", `console requests are limited to ${limit} bytes`);
}

function json(c: Call, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const body = JSON.stringify(value);
  sendJson(c.res, status, body, { "cache-control": "no-store", ...serverTiming(c), ...headers });
}

/**
 * `Server-Timing: console;dur=<ms>`: how long the console's server side took to answer (its calls
 * to the queue and KV APIs included), so the browser's resource timing can tell server time from
 * the rest (bench/console.ts reads it; docs/console.md, First render).
 */
function serverTiming(c: Call): Record<string, string> {
  return { "server-timing": `console;dur=${(performance.now() - c.startedAt).toFixed(1)}` };
}
