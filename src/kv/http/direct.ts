import type { LaneResponse } from "../../shared/http/lane.js";
import { sendError } from "../../shared/http/respond.js";
import type { Logger } from "../../shared/log.js";
import type { Exchange, ExchangeReceiver } from "../../shared/redis/connection.js";
import { serializeReply, type Reply } from "../../shared/redis/resp.js";
import { RequestReplies } from "../commands/execute.js";
import type { Principal } from "../databases/database.js";
import { errorStatus, renderableAtOnce, renderItem } from "../reply/reply.js";
import { sendSingle, typeOf, type Format, type ReplyOut } from "../reply/send.js";

/** What a DirectAnswer needs of the gateway (http.ts). */
export interface DirectContext {
  logger: Logger;
  out(res: LaneResponse): ReplyOut;
  /** A fresh sync token (`upstash-sync-token`), one per answer. */
  syncToken(): string;
  /** The headers of an answer with this sync token, as the general path sends them. */
  headers(syncToken: string): Record<string, string>;
  /** `headers(syncToken)` as header lines (`name: value` CRLF each), in the same order. */
  headerLines(syncToken: string): string;
}

/**
 * What the answers of requests sent without a promise share: an outcome that throws becomes a
 * failure, a failure is answered as the general path answers it (sendError), and the end of the
 * answer lets the connection read on (the lane gives the body's bytes back first). Never throws
 * (ExchangeReceiver): a bug here costs the request's connection.
 */
export abstract class DirectReceiver implements ExchangeReceiver {
  constructor(
    protected readonly kv: DirectContext,
    protected readonly p: Principal,
    protected readonly format: Format,
    protected readonly res: LaneResponse,
  ) {}

  replied(result: Exchange): void {
    try {
      this.answer(result);
    } catch (err) {
      this.failed(err instanceof Error ? err : new Error(String(err)));
    }
  }

  failed(err: Error): void {
    try {
      const token = this.kv.syncToken();
      sendError(this.res, this.p.db.explainFailure(err), this.kv.logger, this.kv.headers(token));
    } catch {
      this.res.destroy();
    }
    this.finish();
  }

  /** Writes the answer to `result`, then calls `finish` (at once, or when it is written). */
  protected abstract answer(result: Exchange): void;

  /** `finish` once `sending` is done; `failed` if it fails. */
  protected finishAfter(sending: Promise<void>): void {
    sending.then(
      () => this.finish(),
      (err: unknown) => this.failed(err instanceof Error ? err : new Error(String(err))),
    );
  }

  /**
   * The answer is over: the request's body goes back to the budget (LaneResponse.hold, before
   * the connection reads its next request), the connection reads on.
   */
  protected finish(): void {
    this.res.done();
  }
}

/**
 * The answer to a `POST /` command sent by `sendDirect` (kv/fast/single.ts), written when its
 * reply comes, in the socket event that brought it, with the bytes the general path
 * (http.ts `answer`, then reply/send.ts `sendSingle`) writes for the same reply: a reply small
 * enough to render at once goes out with its headers in one write; a larger one takes
 * `sendSingle` itself (streamed with backpressure).
 */
export class DirectAnswer extends DirectReceiver {
  private readonly replies = new RequestReplies(this.p);

  protected answer(result: Exchange): void {
    const reply = this.replies.explainOne(result.replies[0] as Reply);
    const token = this.kv.syncToken();
    if (!renderableAtOnce(reply)) {
      const headers = this.kv.headers(token);
      this.finishAfter(sendSingle(this.kv.out(this.res), reply, this.format, headers, "POST"));
      return;
    }
    const status = reply.kind === "error" ? errorStatus(reply.value) : 200;
    const { resp2, base64 } = this.format;
    const body = resp2 ? serializeReply(reply) : renderItem(reply, base64);
    const lines = `${this.kv.headerLines(token)}content-type: ${typeOf(this.format)}\r\n`;
    this.res.endWhole(status, lines, body);
    this.finish();
  }
}
