import http from "node:http";

/**
 * Drives a fuzz run: sends `count` requests built by `send(i)` one after another, fails on the
 * first 5xx or transport error (naming the request through `describe()`), samples the process's
 * peak RSS, and prints the figures docs/reliability.md records.
 */
export interface FuzzAnswer {
  status: number;
  body: string;
}

export interface FuzzRun {
  statuses: Map<number, number>;
  peakRssMiB: number;
}

export async function runFuzz(
  label: string,
  count: number,
  send: (i: number) => Promise<FuzzAnswer>,
  describe: () => string,
): Promise<FuzzRun> {
  const statuses = new Map<number, number>();
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 20);
  try {
    for (let i = 0; i < count; i++) {
      const res = await send(i).catch((err: unknown) => {
        throw new Error(`request ${i} (${describe()}): ${String(err)}`);
      });
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status >= 500) {
        throw new Error(
          `request ${i} (${describe()}) got ${res.status}: ${res.body.slice(0, 300)}`,
        );
      }
    }
  } finally {
    clearInterval(sampler);
  }
  const peakRssMiB = Math.round(peakRss / 2 ** 20);
  const byStatus = JSON.stringify([...statuses].sort((a, b) => a[0] - b[0]));
  console.log(
    `[reliability] scenario 4 ${label}: sent ${count}, 5xx 0, peak rss ${peakRssMiB} MiB, statuses ${byStatus}`,
  );
  return { statuses, peakRssMiB };
}

/**
 * One raw HTTP request on a fresh agent-less connection to 127.0.0.1:`port`; the body is sent
 * except for GET and HEAD. With `tolerateAbortedUpload`, EPIPE/ECONNRESET while sending (a server
 * refusing an oversize body early) is ignored, since the answer still arrives.
 */
export function rawRequest(
  port: number,
  method: string,
  path: string,
  headers: http.OutgoingHttpHeaders,
  body: Buffer,
  tolerateAbortedUpload = false,
): Promise<FuzzAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path, method, headers }, (res) => {
      let text = "";
      res.setEncoding("latin1");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", (err: NodeJS.ErrnoException) => {
      const aborted = err.code === "EPIPE" || err.code === "ECONNRESET";
      if (!(tolerateAbortedUpload && aborted)) reject(err);
    });
    req.end(method === "GET" || method === "HEAD" ? undefined : body);
  });
}
