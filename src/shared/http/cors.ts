import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { closingIfUnread } from "./respond.js";

/**
 * CORS for the token-authenticated APIs (KV gateway and queue), so the SDKs work from a browser.
 * The rules are the same on both ports: any origin (`*`, never with credentials: a token travels
 * in the `Authorization` header the page's script sets, no cookie is involved), a preflight
 * (`OPTIONS`) answered 204 before the token is checked (browsers send it without one), cached
 * for a day.
 */
export interface CorsRules {
  /** Methods a preflight allows (OPTIONS is added). */
  methods: readonly string[];
  /**
   * Request headers a preflight allows: a fixed list (lower case), or `requested`: the ones the
   * preflight names, for an API whose clients send an open set (the queue's
   * `Upstash-Forward-*`). Either way a page can only send headers its own script chose.
   */
  allowHeaders: readonly string[] | "requested";
  /** Response headers a page's script may read. */
  exposeHeaders: readonly string[];
}

const MAX_AGE_S = "86400";
/** A comma-separated list of header names (RFC 9110 tokens), as a preflight may ask for. */
const HEADER_LIST = /^[!#$%&'*+.^_`|~0-9a-z-]+(?:[ \t]*,[ \t]*[!#$%&'*+.^_`|~0-9a-z-]+)*$/i;
/** Longest requested-headers list reflected; a longer one gets the base list only. */
const MAX_REQUESTED = 8 * 1024;
/** Always allowed: what every SDK sends (the token and the JSON body's type). */
const BASE_HEADERS = ["authorization", "content-type"];

export class Cors {
  /** Headers on every answer (preflights included). */
  readonly headers: Readonly<Record<string, string>>;
  private readonly preflightBase: Readonly<Record<string, string>>;

  constructor(private readonly rules: CorsRules) {
    this.headers = {
      "access-control-allow-origin": "*",
      ...(rules.exposeHeaders.length > 0
        ? { "access-control-expose-headers": rules.exposeHeaders.join(", ") }
        : {}),
    };
    this.preflightBase = {
      ...this.headers,
      "access-control-allow-methods": [...rules.methods, "OPTIONS"].join(", "),
      "access-control-max-age": MAX_AGE_S,
    };
  }

  /** `headers` as header lines (`name: value` and CRLF each), as node:http writes them. */
  headerLines(): string {
    return Object.entries(this.headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join("");
  }

  /** The headers of the 204 answer to preflight `req`. */
  preflightHeaders(req: IncomingMessage): Record<string, string> {
    if (this.rules.allowHeaders !== "requested") {
      return {
        ...this.preflightBase,
        "access-control-allow-headers": this.rules.allowHeaders.join(", "),
      };
    }
    const asked = requestedHeaders(req);
    return {
      ...this.preflightBase,
      "access-control-allow-headers": [...BASE_HEADERS, ...asked].join(", "),
      // The answer depends on what was asked: caches must not hand it to another preflight.
      vary: "Access-Control-Request-Headers",
    };
  }

  /** Answers a preflight: 204, no body; a body sent with it is drained, not read. */
  answerPreflight(req: IncomingMessage, res: ServerResponse): void {
    const answer = closingIfUnread(req, this.preflightHeaders(req));
    req.resume();
    res.writeHead(204, answer).end();
  }

  /**
   * `handler` behind CORS: preflights answered here, every other answer carrying `headers` (set
   * before the handler runs, so its `writeHead` adds to them).
   */
  wrap(handler: RequestListener): RequestListener {
    return (req, res) => {
      if ((req.method ?? "").toUpperCase() === "OPTIONS") {
        this.answerPreflight(req, res);
        return;
      }
      for (const [name, value] of Object.entries(this.headers)) res.setHeader(name, value);
      handler(req, res);
    };
  }
}

/** The header names a preflight asks for, lower case; none when the list is malformed. */
function requestedHeaders(req: IncomingMessage): string[] {
  const raw = req.headers["access-control-request-headers"];
  if (typeof raw !== "string" || raw.length > MAX_REQUESTED || !HEADER_LIST.test(raw.trim())) {
    return [];
  }
  const names = raw.split(",").map((h) => h.trim().toLowerCase());
  return [...new Set(names)].filter((h) => !BASE_HEADERS.includes(h));
}
