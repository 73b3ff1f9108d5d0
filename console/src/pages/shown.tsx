/**
 * How the queue views show values: bodies decoded (UTF-8 text, else hex), times with their time
 * zone, and links to other objects' pages (docs/console.md, URLs). Every value is rendered as
 * text (JSX escapes it): nothing a message carries can become markup.
 */
import { Pre } from "../ui.js";
import "./queue-views.css";

/** Longest body shown on a page (the queue caps what it keeps anyway). */
const MAX_SHOWN_BYTES = 64 * 1024;

/** A body as text when it is valid UTF-8, else as hex; `truncated` says it was cut. */
export function decodeBody(bytes: Uint8Array): {
  kind: "text" | "hex";
  text: string;
  shownBytes: number;
} {
  const shown = bytes.subarray(0, MAX_SHOWN_BYTES);
  try {
    return {
      kind: "text",
      text: new TextDecoder("utf-8", { fatal: true }).decode(shown),
      shownBytes: shown.length,
    };
  } catch {
    const hex = Array.from(shown, (b) => b.toString(16).padStart(2, "0"));
    const lines: string[] = [];
    for (let i = 0; i < hex.length; i += 16) lines.push(hex.slice(i, i + 16).join(" "));
    return { kind: "hex", text: lines.join("\n"), shownBytes: shown.length };
  }
}

export function base64Bytes(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** A body block: "(empty)", the text, or hex with a note; `cut` when the queue kept only part. */
export function Body(p: { base64?: string | undefined; text?: string | undefined; cut?: boolean }) {
  const bytes =
    p.text !== undefined
      ? new TextEncoder().encode(p.text)
      : p.base64
        ? base64Bytes(p.base64)
        : new Uint8Array();
  if (bytes.length === 0) return <Pre value="(empty)" />;
  const d = decodeBody(bytes);
  const notes = [
    d.kind === "hex" ? `binary (${bytes.length} bytes, shown as hex)` : "",
    d.shownBytes < bytes.length ? `first ${d.shownBytes} of ${bytes.length} bytes` : "",
    p.cut ? "cut by the queue (STASHD_QUEUE_LOGGED_RESPONSE_BYTES)" : "",
  ].filter((n) => n !== "");
  return (
    <div class="body-block" data-body-kind={d.kind}>
      {notes.length > 0 && <p class="hint">{notes.join("; ")}</p>}
      <Pre value={d.text} />
    </div>
  );
}

/** Times shown with their zone (ui.tsx fmtTime). */
export { fmtTime as fmtZoned } from "../ui.js";

/** "in 3m 20s" / "5s ago" next to a time. */
export function fmtRelative(ms: number, now = Date.now()): string {
  const s = Math.round((ms - now) / 1000);
  const abs = Math.abs(s);
  const text =
    abs < 90 ? `${abs}s` : abs < 5400 ? `${Math.round(abs / 60)}m` : `${Math.round(abs / 3600)}h`;
  return s >= 0 ? `in ${text}` : `${text} ago`;
}

export function fmtDuration(ms: number | undefined): string {
  if (ms === undefined) return "—";
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

/** The hash URL of an object's page (stable: docs/console.md, URLs). */
export const hrefOf = {
  message: (id: string) => `#/messages/${encodeURIComponent(id)}`,
  dlq: (id: string) => `#/dlq/${encodeURIComponent(id)}`,
  schedule: (id: string) => `#/schedules/${encodeURIComponent(id)}`,
  queue: (name: string) => `#/queues/${encodeURIComponent(name)}`,
};

export function go(href: string): void {
  location.hash = href;
}
