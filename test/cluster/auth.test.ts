import { describe, expect, it } from "vitest";
import { onNode } from "../harness/cluster.js";
import { keyPerMaster, useCluster, type ClusterContext } from "./context.js";

let c: ClusterContext;
let keys: string[];

// The nodes only let in the ACL user `app` (the default user is off): stashd logs in with the
// URL's user on every node, for routing, the slot map and the read-only user alike.
useCluster(
  (ready) => (c = ready),
  {},
  async (cluster) => {
    keys = await keyPerMaster(cluster, "auth");
    const app = ["ACL", "SETUSER", "app", "on", ">app-secret", "~*", "&*", "+@all"];
    for (const port of cluster.ports) {
      for (const args of [
        app,
        ["CONFIG", "SET", "masteruser", "app"],
        ["CONFIG", "SET", "masterauth", "app-secret"],
        ["ACL", "SETUSER", "default", "off"],
      ]) {
        expect((await onNode(port, args)).kind).not.toBe("error");
      }
    }
    return `redis://app:app-secret@127.0.0.1:${cluster.ports[1] ?? 0}`;
  },
);

describe("KV on a Redis Cluster with an ACL user in the URL", () => {
  it("logs in on every node and serves both tokens", async () => {
    for (const key of keys) {
      expect(await c.direct.set(key, "v")).toBe("OK");
      expect(await c.readonly.get(key)).toBe("v");
      await expect(c.readonly.del(key)).rejects.toThrow(/NOPERM/);
    }
    expect(await c.direct.dbsize()).toBe(3);
    await expect(onNode(c.cluster.ports[0] as number, ["PING"])).resolves.toMatchObject({
      kind: "error",
    });
  });
});
