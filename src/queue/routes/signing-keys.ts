import { AppError } from "../../shared/errors.js";
import { saveSigningKeys } from "../credentials.js";
import type { Handler } from "./context.js";
import { reply } from "./util.js";

/** GET /v2/keys → `{current, next}`. */
export const getKeys: Handler = async (ctx, r) => {
  reply(r.res, 200, await ctx.keys.get(true));
};

/**
 * POST /v2/keys/rotate (alias /v2/rotate): next becomes current, a new next is generated.
 * Refused (403, nothing changed) when STASHD_QUEUE_KEY_ROTATION is off, as under `stashd dev`:
 * the SDKs' dev mode verifies with the dev server's fixed pair and adopts a server only while
 * `GET /v2/keys` answers exactly that pair, so one rotation would break every dev-mode app.
 */
export const rotateKeys: Handler = async (ctx, r) => {
  if (!ctx.config.queueKeyRotation) {
    throw new AppError(
      "forbidden",
      "signing key rotation is disabled on this server (STASHD_QUEUE_KEY_ROTATION=false; " +
        "`stashd dev` always disables it: the SDKs' dev mode trusts only the QStash dev server's fixed key pair)",
    );
  }
  const pair = await ctx.keys.rotate();
  saveSigningKeys(ctx.config.dataDir, pair.current, pair.next);
  reply(r.res, 200, pair);
};
