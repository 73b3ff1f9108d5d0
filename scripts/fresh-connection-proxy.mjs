// A test aid for the SDK suite reruns (docs/compatibility.md, "Official SDK suites"), not part of
// stashd: `node scripts/fresh-connection-proxy.mjs LISTEN_PORT UPSTREAM_PORT` listens on
// 127.0.0.1:LISTEN_PORT and forwards each HTTP/1.1 request of a client connection, bytes
// unchanged, on a new connection to 127.0.0.1:UPSTREAM_PORT, piping the answers back unchanged.
// Why: the fast lane decides per connection (src/shared/http/lane.ts) and an SDK's fetch keeps a
// few connections for a whole suite, each opened by a request the lane leaves to node:http; through
// this proxy every request is the first one of its connection, so the lane sees all it would take.
// Requests are framed by Content-Length (none: no body); a chunked one passes the rest of its
// client connection through to one upstream. On SIGTERM it prints how many requests it forwarded.
import { Buffer } from "node:buffer";
import net from "node:net";

const [listenPort, upstreamPort] = process.argv.slice(2).map(Number);
let forwarded = 0;

net
  .createServer((client) => {
    let buf = Buffer.alloc(0);
    let bodyLeft = 0;
    let passThrough = false;
    let current;
    const upstreams = new Set();

    const openUpstream = () => {
      const up = net.connect(upstreamPort, "127.0.0.1");
      upstreams.add(up);
      up.on("data", (answer) => client.write(answer));
      up.on("error", () => {});
      up.on("close", () => {
        upstreams.delete(up);
        // The server closed the connection of the latest request: the client's closes too.
        if (up === current) client.end();
      });
      forwarded++;
      return up;
    };

    const pump = () => {
      while (buf.length > 0) {
        if (passThrough || bodyLeft > 0) {
          const n = passThrough ? buf.length : Math.min(bodyLeft, buf.length);
          current.write(buf.subarray(0, n));
          buf = buf.subarray(n);
          if (!passThrough) bodyLeft -= n;
          continue;
        }
        const headEnd = buf.indexOf("\r\n\r\n");
        if (headEnd < 0) return;
        const head = buf.toString("latin1", 0, headEnd);
        current = openUpstream();
        passThrough = /\r\ntransfer-encoding:/i.test(head);
        const length = /\r\ncontent-length:[ \t]*(\d+)/i.exec(head);
        bodyLeft = length ? Number(length[1]) : 0;
        current.write(buf.subarray(0, headEnd + 4));
        buf = buf.subarray(headEnd + 4);
      }
    };

    client.on("data", (chunk) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      pump();
    });
    client.on("end", () => current?.end());
    client.on("error", () => {});
    client.on("close", () => {
      for (const up of upstreams) up.destroy();
    });
  })
  .listen(listenPort, "127.0.0.1");

process.on("SIGTERM", () => {
  console.log(`requests forwarded: ${forwarded}`);
  process.exit(0);
});
