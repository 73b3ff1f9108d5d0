import { hashSlot } from "../../src/shared/redis/cluster/slot.js";
import { QUEUE_PREFIX } from "../../src/queue/store/keys.js";
import { mastersOf, ownerPort, type TestCluster } from "../harness/cluster.js";

/** The slot all queue keys hash to (the `{stashd:q}` tag). */
export const QUEUE_SLOT = hashSlot(QUEUE_PREFIX);

/** One publish attempt under load: when it started and the message id of a 201. */
export interface Publish {
  startedAt: number;
  messageId?: string;
  error?: string;
}

/**
 * `workers` loops publishing to `destination` through the queue APIs at `urls` (in turn), one
 * request at a time each, until `stop()`; every attempt is recorded, acknowledged ones with
 * their message id.
 */
export function publishLoad(
  urls: string[],
  token: string,
  destination: string,
  workers = 6,
): { stop: () => Promise<Publish[]>; publishes: Publish[]; acked: () => string[] } {
  const publishes: Publish[] = [];
  let running = true;
  const run = async (w: number): Promise<void> => {
    for (let round = 0; running; round++) {
      const base = urls[(w + round) % urls.length] as string;
      const startedAt = Date.now();
      try {
        const res = await fetch(`${base}/v2/publish/${destination}`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}` },
          body: `w${w}-${round}`,
        });
        const text = await res.text();
        if (res.status !== 201) publishes.push({ startedAt, error: `${res.status} ${text}` });
        else
          publishes.push({
            startedAt,
            messageId: (JSON.parse(text) as { messageId: string }).messageId,
          });
      } catch (err) {
        publishes.push({ startedAt, error: String(err) });
      }
    }
  };
  const done = Promise.all(Array.from({ length: workers }, (_, w) => run(w)));
  return {
    publishes,
    acked: () => publishes.flatMap((p) => (p.messageId ? [p.messageId] : [])),
    stop: async () => {
      running = false;
      await done;
      return publishes;
    },
  };
}

/** The master serving the queue's slot now, as a live master sees it. */
export async function queueMaster(cluster: TestCluster): Promise<number> {
  const [seed] = await mastersOf(cluster);
  return ownerPort(seed as number, QUEUE_SLOT);
}

/** Kills a node with SIGKILL; resolves once it has exited. */
export async function killNode(cluster: TestCluster, port: number): Promise<void> {
  const node = cluster.nodes.find((n) => n.port === port);
  if (!node) throw new Error(`no node on port ${port}`);
  const exited = new Promise((resolve) => node.child.once("exit", resolve));
  node.child.kill("SIGKILL");
  await exited;
}
