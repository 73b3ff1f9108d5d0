import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { AppError } from "../../shared/errors.js";
import { readBody, type BodyBudget } from "../../shared/http/body.js";
import { vouchFor } from "../../shared/http/connections.js";
import { Cors } from "../../shared/http/cors.js";
import type { LaneResponse } from "../../shared/http/lane.js";
import type { LaneRequest } from "../../shared/http/lane-parse.js";
import { closingIfUnread, sendError, type ReplySink } from "../../shared/http/respond.js";
import { labelRequest } from "../../shared/instrument.js";
import type { Logger } from "../../shared/log.js";
import { metrics } from "../../shared/metrics.js";
import type { Arg } from "../../shared/redis/resp.js";
import type { Principal } from "../databases/database.js";
import type { DatabaseManager } from "../databases/database-manager.js";
import {
  runEncodedPipeline,
  runShortPipeline,
  runSingle,
  SHORT_BODY_BYTES,
  SLICE,
} from "../commands/execute.js";
import { runTransaction } from "../commands/transaction.js";
import { parseCommand, parsePlainCommand, readCommandList } from "../parse/body-args.js";
import { ReplyBuffers, StreamBacklog } from "../reply/reply-buffers.js";
import {
  sendList,
  sendSingle,
  sendSlicedPipeline,
  type Format,
  type ReplyOut,
} from "../reply/send.js";
import { openStream, type StreamKind } from "./sse.js";
import { DirectAnswer, type DirectContext } from "./direct.js";
import { sendPipelineDirect } from "./direct-pipeline.js";
import { sendDirect } from "../fast/single.js";
import { parseUrl, type UrlParts } from "../parse/url-args.js";
import type { Interrupts } from "../commands/blocking.js";

/**
 * The KV gateway's HTTP edge. Order for every request: CORS preflight → method → token →
 * format headers → route (`/`, `/pipeline`, `/multi-exec`, SSE streams, or a command in the path)
 * → body (within the database's size limit) → guard chain (execute.ts) → reply rendering and
 * sending (reply/send.ts).
 */
const METHODS = new Set(["GET", "HEAD", "POST", "PUT"]);
const BODY_METHODS = new Set(["POST", "PUT"]);
const STREAMS = new Set(["monitor", "subscribe", "psubscribe"]);

const UNAUTHORIZED =
  "WRONGPASS invalid or missing auth token. See https://docs.upstash.com/redis/troubleshooting/http_unauthorized for details.";
/** The headers @upstash/redis sends (`upstash-telemetry-retry` on its retries, from 1.39). */
const CORS = new Cors({
  methods: ["GET", "HEAD", "POST", "PUT"],
  allowHeaders: [
    "authorization",
    "content-type",
    "accept",
    "cache-control",
    "upstash-encoding",
    "upstash-response-format",
    "upstash-sync-token",
    "upstash-telemetry-sdk",
    "upstash-telemetry-platform",
    "upstash-telemetry-runtime",
    "upstash-telemetry-retry",
  ],
  exposeHeaders: ["upstash-sync-token"],
});

/** CORS.headers as header lines (DirectContext.headerLines). */
const CORS_LINES = CORS.headerLines();

/** The format when the request names none (nearly every request). */
const JSON_FORMAT: Format = { base64: false, resp2: false };

/** What `answer` needs of a request, whichever way it came (node:http or the lane). */
interface Answerable {
  url: UrlParts;
  /** The first path segment, lower-cased. */
  first: string | undefined;
  method: string;
  format: Format;
  body: Buffer | undefined;
  res: ReplySink;
  headers: Record<string, string>;
  interrupts: Interrupts;
  /** Names the request (its command) for metrics and the request log. */
  label: (label: string) => void;
}

const ROOT_URL = parseUrl("/");
const PIPELINE_URL = parseUrl("/pipeline");

export interface KvHttpOptions {
  manager: DatabaseManager;
  logger: Logger;
  sseKeepAliveMs: number;
  /** STASHD_KV_MAX_BUFFERED_REPLY_BYTES (see reply-buffers.ts). */
  maxBufferedReplyBytes: number;
  /** How long a client may take none of a reply before it is cut off. */
  writeStallMs: number;
  /** Request body bytes in flight, shared with the queue (STASHD_MAX_INFLIGHT_BODY_BYTES). */
  bodies: BodyBudget;
}

export class KvHttpHandler {
  /** A fresh opaque value per response; stashd fronts one primary, so any change suffices. */
  private syncCounter = 0;
  private readonly syncPrefix = randomBytes(6).toString("hex");
  private readonly streams = new Set<() => void>();
  /** Ends the wait of each request blocked in Redis (blocking.ts), for shutdown. */
  private readonly blocked = new Set<(why: string) => void>();

  private readonly buffers: ReplyBuffers;

  /** What the answers of `sentDirect` need of this gateway. */
  private readonly direct: DirectContext;

  constructor(private readonly opts: KvHttpOptions) {
    this.buffers = new ReplyBuffers(opts.maxBufferedReplyBytes);
    this.direct = {
      logger: opts.logger,
      out: (res) => this.out(res),
      syncToken: () => this.syncToken(),
      headers: (token) => this.responseHeaders(token),
      headerLines: (token) => `${CORS_LINES}upstash-sync-token: ${token}\r\n`,
    };
  }

  private out(res: ReplySink): ReplyOut {
    return { res, buffers: this.buffers, stallMs: this.opts.writeStallMs };
  }

  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    const headers = this.responseHeaders();
    this.route(req, res, headers).catch((err: unknown) => {
      const answer = closingIfUnread(req, headers);
      req.resume();
      sendError(res, err, this.opts.logger, answer);
    });
  };

  /**
   * A request of the fast lane in front of node:http (shared/http/lane.ts): `POST /` or
   * `POST /pipeline`, read whole. Served as `handle` serves it, from the token on; declined
   * (undefined, nothing written, node:http then serves it) whenever `handle` would answer before
   * the token is known, or refuse it for its size, its format headers or the body budget, so
   * that those answers, their wording and their connection handling stay node:http's.
   */
  readonly serveLane = (r: LaneRequest, res: LaneResponse): boolean => {
    const principal = this.laneable(r, r.body.length);
    const format = laneFormat(r);
    if (!principal || format === undefined || !this.opts.bodies.take(r.body.length)) return false;
    vouchForPrincipal(res.socket, principal);
    res.hold(() => this.opts.bodies.give(r.body.length));
    if (!r.pipeline && this.sentDirect(principal, r.body, format, res)) return true;
    if (r.pipeline && this.sentPipelineDirect(principal, r.body, format, res)) return true;
    const headers = this.responseHeaders();
    if (r.pipeline) res.label = { label: "pipeline", unverified: false };
    const request: Answerable = {
      url: r.pipeline ? PIPELINE_URL : ROOT_URL,
      first: r.pipeline ? "pipeline" : undefined,
      method: "POST",
      format,
      body: r.body,
      res,
      headers,
      interrupts: this.interruptsOf(res.socket),
      label: (label) => (res.label = { label, unverified: true }),
    };
    this.answer(principal, request)
      .catch((err: unknown) => {
        sendError(res, principal.db.explainFailure(err), this.opts.logger, headers);
      })
      .then(
        () => res.done(),
        () => res.done(),
      );
    return true;
  };

  /**
   * The lane's `admit` (shared/http/lane.ts): a request whose body of `length` bytes is still
   * arriving is waited for when serveLane would take it, its body counted in the budget from the
   * head, as node:http's route counts it.
   */
  readonly admitLane = (
    r: LaneRequest,
    length: number,
    socket: Socket,
  ): (() => void) | undefined => {
    const principal = this.laneable(r, length);
    if (!principal || laneFormat(r) === undefined || !this.opts.bodies.take(length))
      return undefined;
    vouchForPrincipal(socket, principal);
    return () => this.opts.bodies.give(length);
  };

  /** The principal of a lane request with a body of `length` bytes, if it may send that much. */
  private laneable(r: LaneRequest, length: number): Principal | undefined {
    if (r.authorization === undefined) return undefined;
    const principal = this.opts.manager.authenticate(bearerToken(r.authorization));
    return principal && length <= principal.db.maxRequestBytes ? principal : undefined;
  }

  /**
   * A `POST /` command the guard chain would send to Redis as it came, sent so (sendDirect) and
   * answered by a DirectAnswer; false, with nothing sent, for any other.
   */
  private sentDirect(p: Principal, body: Buffer, format: Format, res: LaneResponse): boolean {
    const argv = parsePlainCommand(body);
    if (argv === undefined) return false;
    const label = sendDirect(p, argv, new DirectAnswer(this.direct, p, format, res));
    if (label === undefined) return false;
    res.label = label;
    return true;
  }

  /**
   * A `/pipeline` body runEncodedPipeline would send, sent so without a promise
   * (direct-pipeline.ts); false, with nothing sent, for any other.
   */
  private sentPipelineDirect(
    p: Principal,
    body: Buffer,
    format: Format,
    res: LaneResponse,
  ): boolean {
    res.label = { label: "pipeline", unverified: false };
    return sendPipelineDirect(this.direct, p, body, format, res);
  }

  /** A fresh opaque `upstash-sync-token` value. */
  private syncToken(): string {
    return `${this.syncPrefix}-${++this.syncCounter}`;
  }

  /** The headers of every answer: CORS, and a sync token (a fresh one unless given). */
  private responseHeaders(syncToken = this.syncToken()): Record<string, string> {
    return { ...CORS.headers, "upstash-sync-token": syncToken };
  }

  /**
   * Ends every open event stream and every blocked request's wait (on shutdown, so the server
   * can close and no Redis client stays blocked).
   */
  endHeld(): void {
    for (const end of [...this.streams]) end();
    for (const end of [...this.blocked]) end("stashd is shutting down; retry");
  }

  /**
   * What ends a request's blocked wait (blocking.ts) or its SEARCH.* / VECTOR.* query
   * (search/scheduler.ts) early: its client going away (the socket closes; watched on the
   * socket, since a response queued behind others on a keep-alive connection has none yet), or
   * shutdown. Watching starts only when a request blocks or asks for a place to compute.
   */
  private interruptsOf(socket: Socket): Interrupts {
    return {
      watch: (end) => {
        let ended = false;
        const once = (why: string): void => {
          if (ended) return;
          ended = true;
          end(why);
        };
        const gone = (): void => once("the client went away");
        socket.once("close", gone);
        this.blocked.add(once);
        // A client gone before watching began fired its close already.
        if (socket.destroyed) gone();
        return () => {
          socket.off("close", gone);
          this.blocked.delete(once);
        };
      },
    };
  }

  private async route(
    req: IncomingMessage,
    res: ServerResponse,
    headers: Record<string, string>,
  ): Promise<void> {
    const method = req.method ?? "GET";
    if (method === "OPTIONS") {
      CORS.answerPreflight(req, res);
      return;
    }
    if (!METHODS.has(method)) {
      throw new AppError(
        "method_not_allowed",
        `ERR method ${method} is not allowed; use GET, HEAD, POST or PUT`,
      );
    }
    const url = parseUrl(req.url ?? "/");
    const principal = this.opts.manager.authenticate(tokenOf(req, url));
    if (!principal) throw new AppError("unauthorized", UNAUTHORIZED);
    vouchForPrincipal(req.socket, principal);
    await this.serve(principal, url, req, res, headers).catch((err: unknown) => {
      throw principal.db.explainFailure(err);
    });
  }

  /** An authenticated request: a stream, a pipeline or transaction, or one command. */
  private async serve(
    principal: Principal,
    url: UrlParts,
    req: IncomingMessage,
    res: ServerResponse,
    headers: Record<string, string>,
  ): Promise<void> {
    const method = req.method ?? "GET";
    const format = formatOf(req);
    const first = url.segments[0]?.toString().toLowerCase();
    if (
      first !== undefined &&
      (STREAMS.has(first) || first === "pipeline" || first === "multi-exec")
    )
      labelRequest(req, first);
    if (first !== undefined && STREAMS.has(first)) {
      await this.stream(principal, first as StreamKind, url, req, res, headers);
      return;
    }
    const body = BODY_METHODS.has(method)
      ? await readLimitedBody(req, principal, { budget: this.opts.bodies, until: res })
      : undefined;
    await this.answer(principal, {
      url,
      first,
      method,
      format,
      body,
      res,
      headers,
      interrupts: this.interruptsOf(req.socket),
      label: (label) => labelRequest(req, label, true),
    });
  }

  /** A request's body read: runs its pipeline, transaction or command and sends the answer. */
  private async answer(principal: Principal, r: Answerable): Promise<void> {
    const { url, first, method, format, body, res, headers } = r;
    if (first === "pipeline" || first === "multi-exec") {
      if (!body)
        throw new AppError("method_not_allowed", `ERR /${first} takes POST with a JSON body`);
      const to = { res, format, headers, method };
      if (first === "pipeline" && (await this.sentEncoded(principal, body, to))) return;
      const { maxCommandsPerRequest, maxCommandArgs } = principal.db;
      const commands = await readCommandList(body, maxCommandsPerRequest, maxCommandArgs);
      if (first === "multi-exec") {
        const replies = await runTransaction(principal, commands);
        await sendList(
          this.out(res),
          replies,
          { base64: format.base64, resp2: false },
          headers,
          method,
        );
      } else if (commands.length <= SLICE && body.length <= SHORT_BODY_BYTES) {
        const replies = await runShortPipeline(principal, commands.rest(), r.interrupts);
        await sendList(this.out(res), replies, format, headers, method);
      } else {
        await sendSlicedPipeline(
          this.out(res),
          principal,
          commands,
          { format, headers, method },
          r.interrupts,
        );
      }
      return;
    }
    const argv =
      commandOf(url, body) ??
      (await parseCommand(body ?? Buffer.alloc(0), principal.db.maxCommandArgs));
    r.label(argv[0]?.toString().toUpperCase() ?? "");
    const reply = await runSingle(principal, argv, r.interrupts);
    await sendSingle(this.out(res), reply, format, headers, method);
  }

  /**
   * A `/pipeline` body encoded straight into RESP and sent as it is (encoded-pipeline.ts,
   * runEncodedPipeline); false when it cannot be, with nothing sent.
   */
  private async sentEncoded(
    p: Principal,
    body: Buffer,
    to: { res: ReplySink; format: Format; headers: Record<string, string>; method: string },
  ): Promise<boolean> {
    const replies = await runEncodedPipeline(p, body);
    if (!replies) return false;
    await sendList(this.out(to.res), replies, to.format, to.headers, to.method);
    return true;
  }

  private async stream(
    p: Principal,
    kind: StreamKind,
    url: UrlParts,
    req: IncomingMessage,
    res: ServerResponse,
    headers: Record<string, string>,
  ): Promise<void> {
    req.resume();
    const target = url.segments
      .slice(1)
      .map((s) => s.toString())
      .join("/");
    await openStream(p, kind, target, req, res, {
      keepAliveMs: this.opts.sseKeepAliveMs,
      headers,
      backlog: new StreamBacklog(this.buffers, p.db.maxReplyBytes),
      logger: this.opts.logger,
      track: (end) => {
        this.streams.add(end);
        metrics.sseOpened();
        return () => {
          if (this.streams.delete(end)) metrics.sseClosed();
        };
      },
    });
  }
}

/**
 * A request authenticated as `principal` keeps its connection from being shed under a
 * connection flood (shared/http/connections.ts), unless it gave the public read-only token.
 */
function vouchForPrincipal(socket: Socket, principal: Principal): void {
  if (principal.role !== "readonly") vouchFor(socket);
}

function tokenOf(req: IncomingMessage, url: UrlParts): string | undefined {
  const auth = req.headers.authorization;
  return auth === undefined ? url.token : bearerToken(auth);
}

/** The token of an Authorization header ("" when it holds none). */
function bearerToken(auth: string): string {
  // The common spelling without a regex; anything else (other case, more spaces) with one.
  if (auth.startsWith("Bearer ") && !/\s/.test(auth.slice(7)) && auth.length > 7)
    return auth.slice(7);
  const m = /^bearer\s+(\S+)\s*$/i.exec(auth);
  return m?.[1] ?? "";
}

function formatOf(req: IncomingMessage): Format {
  const h = req.headers;
  if (h["upstash-encoding"] === undefined && h["upstash-response-format"] === undefined)
    return JSON_FORMAT;
  return formatFrom(
    headerValue(req, "upstash-encoding"),
    headerValue(req, "upstash-response-format"),
  );
}

/** formatOf of a lane request; undefined for a refusal (node:http then answers it). */
function laneFormat(r: LaneRequest): Format | undefined {
  if (r.encoding === undefined && r.responseFormat === undefined) return JSON_FORMAT;
  try {
    return formatFrom(fieldValue(r.encoding), fieldValue(r.responseFormat));
  } catch {
    return undefined;
  }
}

/** The format that the two headers' values (trimmed, lower-cased, absent when empty) ask for. */
function formatFrom(encoding: string | undefined, format: string | undefined): Format {
  if (format !== undefined && format !== "json" && format !== "resp2") {
    throw new AppError(
      "invalid_format",
      `ERR invalid Upstash-Response-Format ${JSON.stringify(format)}: use json or resp2`,
    );
  }
  const base64 = encoding === "base64";
  if (base64 && format === "resp2") {
    throw new AppError(
      "invalid_format",
      "ERR Upstash-Encoding: base64 cannot be combined with Upstash-Response-Format: resp2",
    );
  }
  return { base64, resp2: format === "resp2" };
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return fieldValue(Array.isArray(v) ? v[0] : v);
}

function fieldValue(text: string | undefined): string | undefined {
  return text === undefined || text === "" ? undefined : text.trim().toLowerCase();
}

function readLimitedBody(
  req: IncomingMessage,
  p: Principal,
  hold: { budget: BodyBudget; until: ServerResponse },
): Promise<Buffer> {
  return readBody(
    req,
    p.db.maxRequestBytes,
    () => new AppError("request_too_large", "ERR max request size exceeded"),
    { ...hold, errorPrefix: "ERR " },
  );
}

/**
 * `/CMD/a/b?x=y` with an optional body: path segments, then the body, then query fields. A JSON
 * command in the body is read here when parsePlainCommand can (nearly always); undefined leaves it
 * to the full reader (`parseCommand`, async), so the usual request takes no promise for it.
 */
function commandOf(url: UrlParts, body: Buffer | undefined): Arg[] | undefined {
  if (url.segments.length === 0) {
    if (body === undefined || body.length === 0) {
      throw new AppError(
        "bad_request",
        "ERR no command: POST a JSON array to / or use /<command>/<arg>/…",
      );
    }
    return parsePlainCommand(body);
  }
  const argv: Arg[] = [...url.segments];
  if (body !== undefined && body.length > 0) argv.push(body);
  argv.push(...url.query);
  return argv;
}
