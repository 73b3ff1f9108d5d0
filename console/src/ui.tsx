import { scaledPeriod, useRefreshChoice, useRefreshNow } from "./refresh.js";
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";

// ---- loading ----

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload: () => void;
}

const reconnectListeners = new Set<() => void>();

/** Called when the console is back online: every list shown loads again (useLoad). */
export function announceReconnect(): void {
  for (const again of reconnectListeners) again();
}

/**
 * Runs `fn` now and whenever `deps` change; a stale answer never overwrites a newer one. New deps
 * (other filters, another page) drop the old data at once, and an error drops it too: rows are
 * never shown under an error or next to filters they were not loaded with. `reload` (a refresh of
 * the same list; the status bar's "Refresh now" and a reconnect reload every one shown) keeps the
 * rows until the answer comes.
 */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({
    loading: true,
  });
  const seq = useRef(0);
  const run = useCallback((fresh: boolean) => {
    const mine = ++seq.current;
    // A first load keeps the initial state (no second render before the data comes).
    setState((s) => (fresh ? (isBlank(s) ? s : { loading: true }) : { ...s, loading: true }));
    fn().then(
      (data) => mine === seq.current && setState({ data, loading: false }),
      (err: unknown) => mine === seq.current && setState({ error: messageOf(err), loading: false }),
    );
    // The caller lists fn's inputs in deps (fn itself is a new closure on every render).
  }, deps);
  // Started as soon as the page is in the DOM, not after the next frame as useEffect would:
  // bench/console.ts measured that frame on every page's first render.
  useLayoutEffect(() => run(true), [run]);
  useEffect(() => {
    const again = () => run(false);
    reconnectListeners.add(again);
    return () => void reconnectListeners.delete(again);
  }, [run]);
  useRefreshNow(() => run(false));
  return {
    data: state.data,
    error: state.error,
    loading: state.loading,
    reload: () => run(false),
  };
}

const isBlank = (s: { data?: unknown; error?: string; loading: boolean }) =>
  s.loading && s.data === undefined && s.error === undefined;

/**
 * Calls `fn` every `ms` (at the default refresh choice; scaled by the user's choice, never while
 * paused: refresh.ts) while the page is visible.
 */
export function useInterval(fn: () => void, ms: number): void {
  const saved = useRef(fn);
  saved.current = fn;
  const period = scaledPeriod(ms, useRefreshChoice());
  useEffect(() => {
    if (period === undefined) return;
    const id = setInterval(() => {
      if (document.visibilityState === "visible") saved.current();
    }, period);
    return () => clearInterval(id);
  }, [period]);
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

// ---- toasts ----

type Toast = { id: number; text: string; kind: "ok" | "error" };
let toastId = 0;
const listeners = new Set<(t: Toast) => void>();

export function toast(text: string, kind: "ok" | "error" = "ok"): void {
  const t = { id: ++toastId, text, kind };
  for (const l of listeners) l(t);
}

export function Toasts() {
  const [items, setItems] = useState<Toast[]>([]);
  useEffect(() => {
    const add = (t: Toast) => {
      setItems((xs) => [...xs.slice(-3), t]);
      setTimeout(() => setItems((xs) => xs.filter((x) => x.id !== t.id)), 4000);
    };
    listeners.add(add);
    return () => void listeners.delete(add);
  }, []);
  return (
    <div class="toasts" role="status">
      {items.map((t) => (
        <div key={t.id} class={`toast ${t.kind}`}>
          {t.text}
        </div>
      ))}
    </div>
  );
}

// ---- controls ----

interface ActionProps {
  label: string;
  /** The action; resolving `false` means it did nothing (declined in a question): no toast. */
  run: () => Promise<unknown>;
  /** Shown in a confirm() box first. */
  confirm?: string | undefined;
  kind?: "primary" | "danger" | "plain";
  /** Toast on success. */
  done?: string;
  disabled?: boolean;
  title?: string | undefined;
}

/** Runs an action once at a time: confirm first, then its outcome as a toast. */
function useRunner(p: ActionProps): [boolean, () => Promise<void>] {
  const [busy, setBusy] = useState(false);
  const go = async () => {
    if (busy || p.disabled) return;
    if (p.confirm && !window.confirm(p.confirm)) return;
    setBusy(true);
    try {
      const outcome = await p.run();
      if (p.done && outcome !== false) toast(p.done);
    } catch (err) {
      toast(messageOf(err), "error");
    } finally {
      setBusy(false);
    }
  };
  return [busy, go];
}

/** A button that runs an async action once at a time and reports its outcome as a toast. */
export function Action(p: ActionProps) {
  const [busy, go] = useRunner(p);
  return (
    <button
      type="button"
      class={`btn ${p.kind ?? "plain"}`}
      disabled={busy || p.disabled}
      onClick={(e) => {
        e.stopPropagation();
        void go();
      }}
      title={p.title}
    >
      {busy ? "…" : p.label}
    </button>
  );
}

/**
 * A form whose action runs on Enter in any of its fields or on its submit button (labelled
 * `label`), once at a time, with the outcome as a toast (as Action).
 */
export function ActionForm(p: ActionProps & { children: ComponentChildren; class?: string }) {
  const [busy, go] = useRunner(p);
  return (
    <form
      class={p.class ?? "bar card"}
      onSubmit={(e) => {
        e.preventDefault();
        void go();
      }}
    >
      {p.children}
      <button
        type="submit"
        class={`btn ${p.kind ?? "primary"}`}
        disabled={busy || p.disabled}
        title={p.title}
      >
        {busy ? "…" : p.label}
      </button>
    </form>
  );
}

/** Pause or Resume, whichever applies; `run` gets the verb (the queue API's path segment). */
export function PauseToggle(p: {
  paused: boolean;
  run: (verb: "pause" | "resume") => Promise<unknown>;
}) {
  return p.paused ? (
    <Action label="Resume" done="Resumed" run={() => p.run("resume")} />
  ) : (
    <Action label="Pause" done="Paused" run={() => p.run("pause")} />
  );
}

export function Field(p: {
  label: string;
  value: string;
  onInput: (v: string) => void;
  placeholder?: string;
  type?: "text" | "datetime-local";
  width?: string;
  name?: string;
}) {
  const common = {
    name: p.name ?? p.label,
    value: p.value,
    placeholder: p.placeholder,
    onInput: (e: Event) => p.onInput((e.target as HTMLInputElement).value),
  };
  return (
    <label class="field" style={p.width ? { width: p.width } : undefined}>
      <span>{p.label}</span>
      {p.type === "datetime-local" ? (
        <input type="datetime-local" {...common} />
      ) : (
        <input type="text" {...common} />
      )}
    </label>
  );
}

export function Select(p: {
  label: string;
  value: string;
  options: [string, string][];
  onChange: (v: string) => void;
}) {
  return (
    <label class="field">
      <span>{p.label}</span>
      <select
        name={p.label}
        value={p.value}
        onChange={(e) => p.onChange((e.target as HTMLSelectElement).value)}
      >
        {p.options.map(([v, l]) => (
          <option key={v} value={v}>
            {l}
          </option>
        ))}
      </select>
    </label>
  );
}

/** A form that runs `onSubmit` on Enter or its submit button (no page reload). */
export function Form(p: { onSubmit: () => void; children: ComponentChildren; class?: string }) {
  return (
    <form
      class={p.class ?? "bar"}
      onSubmit={(e) => {
        e.preventDefault();
        p.onSubmit();
      }}
    >
      {p.children}
    </form>
  );
}

// ---- layout pieces ----

export interface Column<T> {
  title: string;
  render: (row: T) => ComponentChildren;
  class?: string;
}

export function Table<T>(p: {
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  onRow?: (row: T) => void;
  selected?: string | undefined;
  empty?: string;
  label?: string;
  /** When set, shown instead of the rows (and never "empty"): the list could not be loaded. */
  error?: string | undefined;
  /** On phones, each row a card of "column title: value" lines instead of a table to scroll. */
  stack?: boolean;
}) {
  if (p.error) {
    return (
      <p class="error-line" role="alert" data-list-error={p.label}>
        {p.error}
      </p>
    );
  }
  if (p.rows.length === 0) return <p class="empty">{p.empty ?? "Nothing here."}</p>;
  return (
    <table class={p.stack ? "grid stack" : "grid"} aria-label={p.label}>
      <thead>
        <tr>
          {p.columns.map((c) => (
            <th key={c.title} class={c.class}>
              {c.title}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {p.rows.map((row) => {
          const key = p.rowKey(row);
          return (
            <tr
              key={key}
              class={`${p.onRow ? "clickable" : ""} ${p.selected === key ? "selected" : ""}`}
              onClick={p.onRow ? () => p.onRow?.(row) : undefined}
              {...(p.onRow ? rowKeys(() => p.onRow?.(row)) : {})}
            >
              {p.columns.map((c) => (
                <td key={c.title} class={c.class} data-label={c.title}>
                  {p.stack ? <div class="cell">{c.render(row)}</div> : c.render(row)}
                </td>
              ))}
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/**
 * Keyboard use of a clickable row: Tab reaches it, Enter opens it, the arrow keys move to the row
 * above or below. Keys typed in a control inside the row (a checkbox, a button) are left alone.
 */
function rowKeys(open: () => void) {
  return {
    tabIndex: 0,
    onKeyDown: (e: KeyboardEvent) => {
      if (e.target !== e.currentTarget) return;
      const row = e.currentTarget as HTMLTableRowElement;
      if (e.key === "Enter") {
        e.preventDefault();
        open();
      } else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        const next = e.key === "ArrowDown" ? row.nextElementSibling : row.previousElementSibling;
        (next as HTMLElement | null)?.focus();
      }
    },
  };
}

/** The detail panel on the right of a list page. */
export function Panel(p: { title: string; onClose: () => void; children: ComponentChildren }) {
  return (
    <aside class="panel" aria-label={p.title}>
      <header>
        <h2 title={p.title}>{p.title}</h2>
        <button type="button" class="btn plain" onClick={p.onClose} aria-label="Close">
          ✕
        </button>
      </header>
      <div class="panel-body">{p.children}</div>
    </aside>
  );
}

export function Page(p: {
  title: string;
  actions?: ComponentChildren;
  children: ComponentChildren;
  side?: ComponentChildren;
}) {
  return (
    <div class={`page ${p.side ? "with-side" : ""}`}>
      <section class="main">
        <header class="page-head">
          <h1>{p.title}</h1>
          <div class="actions">{p.actions}</div>
        </header>
        {p.children}
      </section>
      {p.side}
    </div>
  );
}

export function ErrorLine(p: { error: string | undefined }) {
  return p.error ? <p class="error-line">{p.error}</p> : null;
}

export function Pre(p: { value: unknown }) {
  const text = typeof p.value === "string" ? p.value : JSON.stringify(p.value, null, 2);
  return <pre class="pre">{text}</pre>;
}

/** Key/value rows (a message's fields, a key's facts). */
export function Facts(p: { items: [string, ComponentChildren][] }) {
  return (
    <dl class="facts">
      {p.items.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  );
}

/** HTTP headers as `Name: value` lines (the API gives each name a list of values). */
export function HeaderList(p: { headers: Record<string, string[]> | undefined }) {
  const lines = Object.entries(p.headers ?? {}).flatMap(([name, values]) =>
    values.map((v) => `${name}: ${v}`),
  );
  return <Pre value={lines.length > 0 ? lines.join("\n") : "(none)"} />;
}

/**
 * Copies `text` to the clipboard (the Clipboard API; a hidden text area and the copy command
 * where that API is refused, as on a page served over plain HTTP from another host).
 */
async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    return;
  } catch {
    // no Clipboard API here: the copy command below
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.append(area);
  area.select();
  const copied = document.execCommand("copy");
  area.remove();
  if (!copied) throw new Error("the browser refused to copy: select the text instead");
}

/** A small copy icon button beside a value; `what` names it ("Copy message id"), also as its tooltip. */
export function CopyButton(p: { value: string; what: string }) {
  return (
    <button
      type="button"
      class="copy"
      aria-label={`Copy ${p.what}`}
      title={`Copy ${p.what}`}
      onClick={(e) => {
        e.stopPropagation();
        copyText(p.value).then(
          () => toast(`Copied ${p.what}`),
          (err: unknown) => toast(messageOf(err), "error"),
        );
      }}
    >
      <svg width="12" height="12" viewBox="0 0 16 16" aria-hidden="true">
        <rect
          x="5"
          y="5"
          width="9"
          height="9"
          rx="1.5"
          fill="none"
          stroke="currentColor"
          stroke-width="1.6"
        />
        <path
          d="M11 3V2.5A1 1 0 0 0 10 1.5H2.5a1 1 0 0 0-1 1V10a1 1 0 0 0 1 1H3"
          fill="none"
          stroke="currentColor"
          stroke-width="1.6"
        />
      </svg>
    </button>
  );
}

/**
 * A long id (a message, DLQ entry, run or flow-control key) on one line: cut with "…" where it
 * does not fit (the whole of it in the tooltip), a link when `href` is given, and a Copy button.
 */
export function Id(p: {
  value: string;
  what: string;
  href?: string | undefined;
  /** Marks it (the message open beside the Logs list: "hl"). */
  mark?: string | undefined;
}) {
  return (
    <span class={p.mark ? `id ${p.mark}` : "id"} data-id={p.value}>
      {p.href ? (
        <a class="id-text" href={p.href} title={p.value}>
          {p.value}
        </a>
      ) : (
        <code class="id-text" title={p.value}>
          {p.value}
        </code>
      )}
      <CopyButton value={p.value} what={p.what} />
    </span>
  );
}

export function Badge(p: { text: string }) {
  return <span class={`badge b-${p.text.toLowerCase()}`}>{p.text}</span>;
}

// ---- formatting ----

/**
 * A time as `2026-11-27 21:50:08 UTC+01:00`: the browser's local time with its offset from UTC
 * ("UTC" when none), so a time pasted into a chat says which zone it is in.
 */
export function fmtTime(ms: number | undefined): string {
  if (!ms) return "—";
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, "0");
  const off = -d.getTimezoneOffset();
  const zone =
    off === 0
      ? "UTC"
      : `UTC${off > 0 ? "+" : "−"}${pad(Math.floor(Math.abs(off) / 60))}:${pad(Math.abs(off) % 60)}`;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ${zone}`;
}

export function fmtTtl(ms: number): string {
  if (ms < 0) return "∞";
  const s = Math.ceil(ms / 1000);
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86400)}d`;
}

/** A size in bytes, in B / KiB / MiB / GiB; "—" when unknown. */
export function fmtBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return "—";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 * 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 / 1024 / 1024).toFixed(1)} GiB`;
}

/** A count with thousands separators ("12,345"); "—" when unknown. */
export function fmtCount(n: number | null | undefined): string {
  if (n === null || n === undefined) return "—";
  return fmtInteger(n);
}

/**
 * An integer with thousands separators, as `toLocaleString("en-US")` writes it but without it:
 * a tab's first `toLocaleString` loads the browser's locale data, 25-50 ms of script on every
 * console page's first render (CPU profiles of bench/console.ts, 2026-11-28).
 */
export function fmtInteger(n: number): string {
  if (!Number.isSafeInteger(n)) return String(n);
  return String(n).replace(/\B(?=(\d{3})+$)/g, ",");
}

export type Children = ComponentChildren;
