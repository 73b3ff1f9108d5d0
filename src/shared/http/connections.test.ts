import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { eventually } from "../../../test/harness/eventually.js";
import { ConnectionCap, defaultConnectionCap, openFilesLimit, vouchFor } from "./connections.js";

/** A loopback server counting its connections with `cap`; its accepted sockets in order. */
async function serverWith(
  cap: ConnectionCap,
): Promise<{ port: number; accepted: net.Socket[]; close(): void }> {
  const accepted: net.Socket[] = [];
  const server = net.createServer((s) => {
    accepted.push(s);
    s.on("error", () => undefined);
  });
  server.on("connection", cap.admit);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    accepted,
    close: () => {
      for (const s of accepted) s.destroy();
      server.close();
    },
  };
}

const clients: net.Socket[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.destroy();
});

/** A client connection; resolves once the server has accepted it (`accepted` grew). */
async function connect(port: number, accepted: net.Socket[]): Promise<net.Socket> {
  const before = accepted.length;
  const c = net.connect(port, "127.0.0.1");
  c.on("error", () => undefined);
  clients.push(c);
  await eventually(() => expect(accepted.length).toBe(before + 1));
  return c;
}

describe("ConnectionCap", () => {
  it("sheds the oldest connection no request vouched for, never a vouched one", async () => {
    const cap = new ConnectionCap(2);
    const srv = await serverWith(cap);
    try {
      await connect(srv.port, srv.accepted);
      await connect(srv.port, srv.accepted);
      const [first, second] = srv.accepted as [net.Socket, net.Socket];
      vouchFor(first);
      await connect(srv.port, srv.accepted);
      // Over by one: the oldest unvouched (the second) goes, the vouched first stays.
      expect(second.destroyed).toBe(true);
      expect(first.destroyed).toBe(false);
      expect(cap.size).toBe(2);
      const third = srv.accepted[2] as net.Socket;
      vouchFor(third);
      // Every counted one is vouched for: the newcomer itself is shed.
      await connect(srv.port, srv.accepted);
      expect((srv.accepted[3] as net.Socket).destroyed).toBe(true);
      expect(first.destroyed || third.destroyed).toBe(false);
      // A connection that ends is no longer counted.
      first.destroy();
      await eventually(() => expect(cap.size).toBe(1));
    } finally {
      srv.close();
    }
  });
});

describe("the default cap", () => {
  it("is three quarters of the soft open-files limit read from /proc/self/limits", () => {
    const limits =
      "Limit                     Soft Limit           Hard Limit           Units\n" +
      "Max processes             95000                95000                processes\n" +
      "Max open files            20000                20000                files\n";
    expect(openFilesLimit(() => limits)).toBe(20_000);
    expect(defaultConnectionCap(20_000)).toBe(15_000);
    expect(openFilesLimit(() => "Max open files  unlimited  unlimited  files\n")).toBe(1024);
    expect(
      openFilesLimit(() => {
        throw new Error("no /proc");
      }),
    ).toBe(1024);
    expect(defaultConnectionCap(40)).toBe(64);
    expect(openFilesLimit()).toBeGreaterThan(0);
  });
});
