import type { LaneResponse } from "../../shared/http/lane.js";
import { sendError } from "../../shared/http/respond.js";
import type { Exchange, ExchangeReceiver } from "../../shared/redis/connection.js";
import { rawResp2 } from "../../shared/redis/raw-replies.js";
import { RequestReplies, sendEncodedPipeline, type SliceReplies } from "../commands/execute.js";
import type { Principal } from "../databases/database.js";
import { rawRenderableAtOnce } from "../reply/reply.js";
import { renderRaw } from "../reply/reply-bytes.js";
import { sendList, typeOf, type Format } from "../reply/send.js";
import type { DirectContext } from "./direct.js";

/**
 * A `/pipeline` body sent to Redis straight from its bytes and answered without a promise
 * (sendEncodedPipeline): true when it was sent, its answer then written by a
 * DirectPipelineAnswer; false, with nothing sent, for the general path.
 */
export function sendPipelineDirect(
  kv: DirectContext,
  p: Principal,
  body: Buffer,
  format: Format,
  res: LaneResponse,
): boolean {
  const replies = new RequestReplies(p);
  const answer = new DirectPipelineAnswer(kv, p, format, res, body.length, replies);
  return sendEncodedPipeline(p, body, replies, answer);
}

/**
 * The answer to such a pipeline, written when its replies come, in the socket event that brought
 * the last of them, with the bytes the general path (http.ts `answer`, then reply/send.ts
 * `sendList`) writes: RawReplies small enough to render at once go out with the headers in one
 * write; anything else (an error among the replies, a list too large for one piece) takes
 * `sendList` itself. Never throws (ExchangeReceiver): a bug here costs the request's connection.
 */
class DirectPipelineAnswer implements ExchangeReceiver {
  private released = false;

  constructor(
    private readonly kv: DirectContext,
    private readonly p: Principal,
    private readonly format: Format,
    private readonly res: LaneResponse,
    private readonly bodyBytes: number,
    private readonly replies: RequestReplies,
  ) {}

  replied(result: Exchange): void {
    try {
      this.answer(this.replies.listOf(result));
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

  private answer(list: SliceReplies): void {
    const token = this.kv.syncToken();
    if (Array.isArray(list) || !rawRenderableAtOnce(list)) {
      sendList(this.kv.out(this.res), list, this.format, this.kv.headers(token), "POST").then(
        () => this.finish(),
        (err: unknown) => this.failed(err instanceof Error ? err : new Error(String(err))),
      );
      return;
    }
    const body = this.format.resp2 ? rawResp2(list) : renderRaw(list, this.format.base64);
    const lines = `${this.kv.headerLines(token)}content-type: ${typeOf(this.format)}\r\n`;
    this.res.endWhole(200, lines, body);
    this.finish();
  }

  /** The answer is over: the body's bytes go back to the budget, the connection reads on. */
  private finish(): void {
    if (!this.released) {
      this.released = true;
      this.kv.release(this.bodyBytes);
    }
    this.res.done();
  }
}
