import http from "node:http";
import type { AddressInfo } from "node:net";
import { Receiver } from "@upstash/qstash";

/**
 * A local HTTP receiver on port 0 for queue tests: records every request, verifies its
 * `Upstash-Signature` with the SDK's `Receiver` (against the exact URL called), and answers with
 * a status (and headers) that tests can switch at any time.
 */
export interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** Undefined when the signature verified; the verification error otherwise. */
  signatureError: string | undefined;
}

export interface SigningKeysSource {
  current: string;
  next: string;
}

export interface TestReceiver {
  url: string;
  requests: Received[];
  status: number;
  responseHeaders: Record<string, string>;
  responseBody: string;
  /** Milliseconds to wait before answering. */
  delayMs: number;
  close(): Promise<void>;
}

export async function startReceiver(keys: () => SigningKeysSource): Promise<TestReceiver> {
  const state: Omit<TestReceiver, "url" | "close"> = {
    requests: [],
    status: 200,
    responseHeaders: {},
    responseBody: "ok",
    delayMs: 0,
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString("utf8");
        const url = `${listening.url}${req.url ?? "/"}`;
        const signatureError = await verify(keys(), req, body, url);
        state.requests.push({
          method: req.method ?? "",
          url,
          headers: req.headers,
          body,
          signatureError,
        });
        if (state.delayMs > 0) await new Promise((r) => setTimeout(r, state.delayMs));
        res.writeHead(state.status, state.responseHeaders).end(state.responseBody);
      })();
    });
  });
  const listening = await listenLocal(server);
  return Object.assign(state, listening);
}

/** Listens on a free loopback port; `close` also ends open connections. */
export async function listenLocal(
  server: http.Server,
): Promise<{ url: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Why the delivery's `Upstash-Signature` does not verify, or undefined when it does. */
export async function verify(
  keys: SigningKeysSource,
  req: http.IncomingMessage,
  body: string,
  url: string,
): Promise<string | undefined> {
  const signature = req.headers["upstash-signature"];
  if (typeof signature !== "string") return "no signature";
  const receiver = new Receiver({ currentSigningKey: keys.current, nextSigningKey: keys.next });
  try {
    await receiver.verify({ signature, body, url });
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}
