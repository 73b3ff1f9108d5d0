import { saveSigningKeys } from "../credentials.js";
import type { Handler } from "./context.js";
import { reply } from "./util.js";

/** GET /v2/keys → `{current, next}`. */
export const getKeys: Handler = async (ctx, r) => {
  reply(r.res, 200, await ctx.keys.get(true));
};

/** POST /v2/keys/rotate (alias /v2/rotate): next becomes current, a new next is generated. */
export const rotateKeys: Handler = async (ctx, r) => {
  const pair = await ctx.keys.rotate();
  saveSigningKeys(ctx.config.dataDir, pair.current, pair.next);
  reply(r.res, 200, pair);
};
