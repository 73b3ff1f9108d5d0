import { describe, expect, it } from "vitest";
import { portOf, RawClient, request, useLaneAndNode } from "../harness/raw-http.js";
import type { TestStashd } from "../harness/stashd.js";

/**
 * How long an idle kept-alive connection stays open, on the KV fast lane (src/shared/http/lane.ts)
 * and on node:http alone (STASHD_KV_FAST_LANE=false). Both announce `Keep-Alive: timeout=N`;
 * node:http closes the idle connection a second after N (Node 20's keep-alive buffer), so that a
 * client reusing it at about N still gets its answer. The lane must do the same: it closed at N,
 * and a client whose request crossed the close got "other side closed" (undici's SocketError).
 */

/** node:http's keep-alive timeout is then 1 s (server.ts: half the header timeout). */
const REQUEST_TIMEOUT_MS = 2000;
/** What both announce for that timeout. */
const ANNOUNCED_S = 1;

const { lane, plain } = useLaneAndNode({ requestTimeoutMs: REQUEST_TIMEOUT_MS });

const auth = (s: TestStashd): Record<string, string> => ({
  Authorization: `Bearer ${s.kv.token}`,
});

/**
 * Sends a request, waits `idleMs` after its answer arrived, then sends another on the same
 * connection: the two answers (raw), and whether the connection was still open before the second.
 */
async function reuseAfter(s: TestStashd, idleMs: number) {
  const client = new RawClient(portOf(s));
  try {
    client.write(request("/", '["SET","ka:k","v"]', auth(s)));
    const [first] = await client.responses(1);
    await new Promise((r) => setTimeout(r, idleMs));
    const openBefore = !client.closed;
    if (!openBefore) return { first: first?.toString() ?? "", second: "", openBefore };
    client.write(request("/", '["GET","ka:k"]', auth(s)));
    const [second] = await client.responses(1);
    return { first: first?.toString() ?? "", second: second?.toString() ?? "", openBefore };
  } finally {
    client.destroy();
  }
}

describe("keep-alive on the KV port", () => {
  it("keeps an idle connection open past the announced timeout, as node:http does", async () => {
    // A quarter second past the announced timeout: node:http keeps the connection 1 s past it,
    // so this leaves 750 ms for the answer to reach the client and the next request the server.
    const idleMs = ANNOUNCED_S * 1000 + 250;
    const [onLane, onNode] = await Promise.all([
      reuseAfter(lane(), idleMs),
      reuseAfter(plain(), idleMs),
    ]);
    for (const seen of [onLane, onNode]) {
      expect(seen.first).toMatch(new RegExp(`\\r\\nKeep-Alive: timeout=${ANNOUNCED_S}\\r\\n`));
      expect(seen.openBefore).toBe(true);
      expect(seen.second).toMatch(/\{"result":"v"\}$/);
    }
  });
});
