import type { LaneResponse } from "../../shared/http/lane.js";
import type { Exchange } from "../../shared/redis/connection.js";
import { rawResp2 } from "../../shared/redis/raw-replies.js";
import { RequestReplies, sendEncodedPipeline } from "../commands/execute.js";
import type { Principal } from "../databases/database.js";
import { rawRenderableAtOnce } from "../reply/reply.js";
import { renderRaw } from "../reply/reply-bytes.js";
import { sendList, typeOf, type Format } from "../reply/send.js";
import { DirectReceiver, type DirectContext } from "./direct.js";

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
  const answer = new DirectPipelineAnswer(kv, p, format, res, replies);
  return sendEncodedPipeline(p, body, replies, answer);
}

/**
 * The answer to such a pipeline, written when its replies come, in the socket event that brought
 * the last of them, with the bytes the general path (http.ts `answer`, then reply/send.ts
 * `sendList`) writes: RawReplies small enough to render at once are rendered behind the
 * headers, into the one buffer that is written (LaneResponse.endHeaded); anything else (an
 * error among the replies, a list too large for one piece) takes `sendList` itself.
 */
class DirectPipelineAnswer extends DirectReceiver {
  constructor(
    kv: DirectContext,
    p: Principal,
    format: Format,
    res: LaneResponse,
    private readonly replies: RequestReplies,
  ) {
    super(kv, p, format, res);
  }

  protected answer(result: Exchange): void {
    const list = this.replies.listOf(result);
    const token = this.kv.syncToken();
    if (Array.isArray(list) || !rawRenderableAtOnce(list)) {
      const headers = this.kv.headers(token);
      this.finishAfter(sendList(this.kv.out(this.res), list, this.format, headers, "POST"));
      return;
    }
    const lines = `${this.kv.headerLines(token)}content-type: ${typeOf(this.format)}\r\n`;
    const head = (length: number): string => this.res.wholeHead(200, lines, length);
    const whole = this.format.resp2
      ? rawResp2(list, head)
      : renderRaw(list, this.format.base64, head);
    this.res.endHeaded(200, whole);
    this.finish();
  }
}
