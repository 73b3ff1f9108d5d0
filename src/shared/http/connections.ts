import { readFileSync } from "node:fs";
import type { Socket } from "node:net";
import { metrics } from "../metrics.js";

/**
 * A bound on the connections one process accepts, its KV, queue and admin listeners together
 * (STASHD_MAX_CONNECTIONS), so that clients can never take the file descriptors the process
 * needs for its own work: Redis connections, delivery sockets, files.
 *
 * Why (measured 2026-11-28, docs/reliability.md, threat model): with nothing but its listeners'
 * accept loops, a stranger holding more idle TCP connections than the fd limit left the process
 * with none: every new connection was accepted and closed at once (libuv's EMFILE fallback), so
 * no KV request, publish or health check was answered while the flood held, and no new Redis or
 * delivery socket could be opened.
 *
 * Past the cap the connection shed is the oldest one no request has vouched for (`vouchFor`: a
 * request that gave the KV standard or an ACL token, or the queue token), which may be the one
 * just accepted: a flood of connections without such a token (idle, trickled, or sending the
 * public read-only token) replaces its own connections and those of other clients without one,
 * never those of a client that proved a token. What the cap cannot do: tell a stranger's
 * connection from a browser's using the read-only token (both may be shed), or limit one
 * address (that is a reverse proxy's job: docs/operations.md, Security).
 */
export class ConnectionCap {
  /** Every connection counted, in the order accepted. */
  private readonly open = new Set<Socket>();
  /** The connections no request has vouched for, oldest first (a Set keeps insertion order). */
  private readonly unvouched = new Set<Socket>();

  constructor(readonly max: number) {}

  /** Connections counted now. */
  get size(): number {
    return this.open.size;
  }

  /**
   * Counts a connection just accepted; past the cap, sheds the oldest unvouched one (possibly
   * this one), whose descriptor is closed at once.
   */
  readonly admit = (socket: Socket): void => {
    this.open.add(socket);
    this.unvouched.add(socket);
    owners.set(socket, this);
    metrics.connectionOpened();
    socket.once("close", () => this.forget(socket));
    if (this.open.size > this.max) this.shed();
  };

  /** A request on `socket` gave a token that makes it worth keeping (vouchFor). */
  vouch(socket: Socket): void {
    this.unvouched.delete(socket);
  }

  private shed(): void {
    const oldest = this.unvouched.values().next();
    // Every other connection is vouched for, and so was this one by now: over the cap by one
    // until a connection ends (an accepted connection is not vouched for before its first read).
    if (oldest.done === true) return;
    this.forget(oldest.value);
    metrics.connectionShed();
    oldest.value.destroy();
  }

  /** Stops counting `socket` (closed, or shed): once. */
  private forget(socket: Socket): void {
    if (!this.open.delete(socket)) return;
    this.unvouched.delete(socket);
    metrics.connectionClosed();
  }
}

/** Which cap counts each connection, for `vouchFor` (called where requests are authenticated). */
const owners = new WeakMap<Socket, ConnectionCap>();

/**
 * The request on `socket` gave a token the process trusts not to flood it (the KV standard or an
 * ACL token, the queue token): the connection is never shed for the cap (ConnectionCap). The
 * public read-only token does not vouch for its connection.
 */
export function vouchFor(socket: Socket | null | undefined): void {
  if (socket) owners.get(socket)?.vouch(socket);
}

/** The cap when STASHD_MAX_CONNECTIONS is 0: a quarter of the fd limit is kept for the process. */
export function defaultConnectionCap(fdLimit = openFilesLimit()): number {
  return Math.max(MIN_CAP, Math.floor(fdLimit * 0.75));
}

/** The least cap derived from a tiny fd limit (a smaller one is set explicitly). */
const MIN_CAP = 64;

/** What Linux reports when /proc/self/limits cannot be read (another OS): its usual soft limit. */
const UNKNOWN_FD_LIMIT = 1024;

/**
 * The process's soft limit of open files, from /proc/self/limits (Node raises its soft limit to
 * the hard one at start-up, so this is the limit it runs with). UNKNOWN_FD_LIMIT when there is no
 * such file or it says "unlimited".
 */
export function openFilesLimit(
  read: () => string = () => readFileSync("/proc/self/limits", "utf8"),
): number {
  try {
    const line = /^Max open files\s+(\S+)/m.exec(read());
    const soft = Number(line?.[1]);
    return Number.isSafeInteger(soft) && soft > 0 ? soft : UNKNOWN_FD_LIMIT;
  } catch {
    return UNKNOWN_FD_LIMIT;
  }
}
