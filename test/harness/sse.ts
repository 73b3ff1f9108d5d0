import http from "node:http";

/**
 * Opens a server-sent event stream with node:http and collects its `data:` lines, so tests can
 * wait for events and close the stream (like a client going away) whenever they want.
 */
export interface SseStream {
  status: number;
  body: string;
  lines: string[];
  raw: () => string;
  close(): void;
}

export function openSse(url: string, token: string): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        accept: "text/event-stream",
        "content-type": "application/json",
      },
    });
    req.on("response", (res) => {
      let raw = "";
      const stream: SseStream = {
        status: res.statusCode ?? 0,
        body: "",
        lines: [],
        raw: () => raw,
        close: () => req.destroy(),
      };
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        raw += chunk;
        stream.body = raw;
        stream.lines = raw
          .split("\n")
          .filter((l) => l.startsWith("data: "))
          .map((l) => l.slice(6));
      });
      res.on("error", () => undefined);
      if ((res.statusCode ?? 0) >= 300) res.on("end", () => resolve(stream));
      else resolve(stream);
    });
    req.on("error", reject);
    req.end("[]");
  });
}
