import os from "node:os";

/**
 * Half of the memory this process may count on: the machine's, or the container's memory limit
 * (cgroup) when that is lower. The default size of a store stashd bounds (a managed KV
 * database's `maxmemory`, the queue's data), so one runaway writer cannot take the machine.
 */
export function halfOfMemory(): number {
  const total = os.totalmem();
  // 0, or a huge number, when no cgroup limit is set.
  const constrained = process.constrainedMemory?.() ?? 0;
  return Math.floor((constrained > 0 && constrained < total ? constrained : total) / 2);
}
