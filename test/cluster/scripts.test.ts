import { describe, expect, it } from "vitest";
import { keyPerMaster, useCluster, type ClusterContext } from "./context.js";

const SCRIPT_LIMIT_MS = 150;
const LOOP = "while true do end";
let c: ClusterContext;
useCluster((ready) => (c = ready), {
  kvScriptTimeLimitMs: SCRIPT_LIMIT_MS,
  kvCommandTimeoutMs: 800,
  // Read-only scripts are an opt-in (threat model); their time limit is tested here.
  kvReadonlyScripts: true,
});

describe("KV on a Redis Cluster: the script time limit", () => {
  it("kills an endless script on whichever master runs it", async () => {
    // Redis's busy threshold lowered on every node, as stashd does for managed databases.
    for (const port of c.cluster.ports) {
      await c.node(port, ["CONFIG", "SET", "busy-reply-threshold", String(SCRIPT_LIMIT_MS)]);
    }
    for (const key of await keyPerMaster(c.cluster, "spin")) {
      const res = await c.stashd.kvFetch("/", {
        body: JSON.stringify(["EVAL_RO", LOOP, "1", key]),
        token: c.stashd.kv.readonlyToken,
        signal: AbortSignal.timeout(3000),
      });
      expect(await res.json()).toEqual({
        error: `ERR script killed: it ran longer than this database's script time limit of ${SCRIPT_LIMIT_MS} ms`,
      });
      expect(await c.direct.set(key, "after")).toBe("OK");
    }
  });
});
