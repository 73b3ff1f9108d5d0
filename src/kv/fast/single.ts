import type { RequestLabel } from "../../shared/instrument.js";
import type { ExchangeReceiver } from "../../shared/redis/connection.js";
import type { Principal } from "../databases/database.js";
import { countCommands, NONE_WATCHED, stepsOf } from "../commands/execute.js";
import { mayEmulate } from "../emulate/route.js";
import { NameCache } from "./name-cache.js";

/**
 * One command sent straight to a shared connection, its reply handed to a receiver in the socket
 * event that brings it: no promise and no step of the guard chain between the request and its
 * answer, for the commands the guard chain would send to Redis as they came. The usual `POST /`
 * request is such a command; its promises (about ten per request through runSingle's pipeline of
 * one) were a measurable share of its CPU (docs/decisions.md, "KV fast lane").
 */

/** What the single-command path needs to know of a command name, whatever the arguments. */
interface DirectName {
  /**
   * runSlice would send it as it came: `plain` (no policy or gateway step, never blocking, never
   * a script call), not rewritten and not emulated. Never for a non-ASCII name.
   */
  readonly direct: boolean;
  /** The request's label (metrics, log line): the name in upper case, as http.ts labels it. */
  readonly label: RequestLabel;
}

function directNames(fieldTtl: boolean): NameCache<DirectName> {
  return new NameCache((name, table, nonAscii) => {
    const steps = stepsOf([name], table);
    const emulated = mayEmulate(name, table, { fieldTtl });
    return {
      direct: !nonAscii && steps.plain && !steps.rewritten && !emulated,
      label: { label: name.toUpperCase(), unverified: true },
    };
  });
}

/** By the database's hash-field expiration emulation (off, on): it decides `mayEmulate`. */
const NAMES = [directNames(false), directNames(true)] as const;

/**
 * Sends `argv` on the principal's shared connection, its outcome to `to`, and counts it (the
 * daily limit, the console's count), when the guard chain would send it as it came and a
 * connection is open: answers the request's label. Undefined otherwise, with nothing sent or
 * counted (an unusual command, a cluster, the database's first requests before its command table
 * is loaded, the daily limit reached): the caller then takes the general path, which answers it.
 */
export function sendDirect(
  p: Principal,
  argv: string[],
  to: ExchangeReceiver,
): RequestLabel | undefined {
  const table = p.db.loadedTable;
  const first = argv[0];
  if (table === undefined || first === undefined) return undefined;
  const name = NAMES[p.db.emulatesFieldTtl ? 1 : 0].get(first, table);
  if (!name.direct) return undefined;
  const conn = p.db.poolFor(p).connectionNow?.();
  if (conn === undefined) return undefined;
  try {
    countCommands(p, 1);
  } catch {
    return undefined;
  }
  const opts = { maxReplyBytes: Math.max(0, p.db.maxReplyBytes), watched: NONE_WATCHED };
  conn.exchangeTo([argv], opts, to);
  return name.label;
}
