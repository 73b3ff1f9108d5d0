import { useState } from "preact/hooks";
import { ApiError, queue, queueSend } from "../api.js";
import { ActionForm, Field, Page, Select, toast, useLoad } from "../ui.js";
import { CronWords } from "./cron-words.js";
import { go, hrefOf } from "./shown.js";

/**
 * The request builder (docs/console.md, Build requests): publish a test message, or create or
 * edit a schedule, with every option the API takes, sent as the `Upstash-*` headers an SDK sends.
 * Numbers are checked before anything is sent; a schedule id in use is replaced only after a
 * question naming the schedule it would replace.
 */
interface Draft {
  destination: string;
  method: string;
  headers: string;
  body: string;
  contentType: string;
  retries: string;
  retryDelay: string;
  delay: string;
  timeout: string;
  callback: string;
  failureCallback: string;
  queueName: string;
  flowControlKey: string;
  parallelism: string;
  rate: string;
  period: string;
  labels: string;
  cron: string;
  scheduleId: string;
}

const EMPTY: Draft = {
  destination: "",
  method: "POST",
  headers: "",
  body: "",
  contentType: "application/json",
  retries: "",
  retryDelay: "",
  delay: "",
  timeout: "",
  callback: "",
  failureCallback: "",
  queueName: "",
  flowControlKey: "",
  parallelism: "",
  rate: "",
  period: "",
  labels: "",
  cron: "*/5 * * * *",
  scheduleId: "",
};

/** A schedule as GET /v2/schedules/{id} renders it (the fields the builder edits). */
interface Schedule {
  scheduleId: string;
  cron: string;
  destination: string;
  method: string;
  header?: Record<string, string[]>;
  body?: string;
  retries: number;
  delay?: number;
  timeout?: number;
  callback?: string;
  failureCallback?: string;
  retryDelayExpression?: string;
  labels?: string[];
  queueName?: string;
  flowControlKey?: string;
  parallelism?: number;
  rate?: number;
  period?: number;
}

/** Whole-number fields: [field, label, smallest value]. Empty means "the API's default". */
const NUMBERS: [keyof Draft, string, number][] = [
  ["retries", "Retries", 0],
  ["delay", "Delay (s)", 0],
  ["timeout", "Timeout (s)", 1],
  ["parallelism", "Parallelism", 1],
  ["rate", "Rate", 1],
  ["period", "Period (s)", 1],
];

/** What is wrong with the draft, or nothing. */
export function problems(d: Draft, mode: "publish" | "schedule"): string[] {
  const out: string[] = [];
  if (!/^https?:\/\//.test(d.destination.trim())) {
    out.push("Destination must be an http:// or https:// URL.");
  }
  for (const [k, label, min] of NUMBERS) {
    const v = d[k].trim();
    if (v !== "" && !(/^\d+$/.test(v) && Number(v) >= min)) {
      out.push(`${label} must be a whole number of ${min} or more, not "${v}".`);
    }
  }
  const fc = d.parallelism.trim() || d.rate.trim() || d.period.trim();
  if (fc && !d.flowControlKey.trim())
    out.push("Parallelism, rate and period need a flow-control key.");
  if (d.period.trim() && !d.rate.trim()) out.push("A period needs a rate.");
  for (const line of headerLines(d.headers)) {
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(line[0]))
      out.push(`"${line[0]}" is not a header name.`);
  }
  if (mode === "schedule" && d.cron.trim().split(/\s+/).length < 5) {
    out.push("Cron needs five fields (minute hour day month weekday).");
  }
  return out;
}

/** "Name: value" lines; blank lines skipped. */
function headerLines(text: string): [string, string][] {
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => {
      const i = l.indexOf(":");
      return i < 0 ? [l.trim(), ""] : [l.slice(0, i).trim(), l.slice(i + 1).trim()];
    });
}

/** The request headers an SDK would send for the draft. */
export function upstashHeaders(d: Draft, mode: "publish" | "schedule"): Record<string, string> {
  const h: Record<string, string> = { "content-type": d.contentType || "text/plain" };
  const set = (name: string, v: string) => {
    if (v.trim() !== "") h[name] = v.trim();
  };
  set("upstash-method", d.method);
  set("upstash-retries", d.retries);
  set("upstash-retry-delay", d.retryDelay);
  if (d.delay.trim()) h["upstash-delay"] = `${d.delay.trim()}s`;
  if (d.timeout.trim()) h["upstash-timeout"] = `${d.timeout.trim()}s`;
  set("upstash-callback", d.callback);
  set("upstash-failure-callback", d.failureCallback);
  set(
    "upstash-label",
    d.labels
      .split(",")
      .map((l) => l.trim())
      .filter(Boolean)
      .join(","),
  );
  set("upstash-flow-control-key", d.flowControlKey);
  const fc = [
    d.parallelism.trim() && `parallelism=${d.parallelism.trim()}`,
    d.rate.trim() && `rate=${d.rate.trim()}`,
    d.period.trim() && `period=${d.period.trim()}s`,
  ].filter(Boolean);
  if (fc.length > 0) h["upstash-flow-control-value"] = fc.join(", ");
  for (const [name, value] of headerLines(d.headers))
    h[`upstash-forward-${name.toLowerCase()}`] = value;
  if (mode === "schedule") {
    set("upstash-cron", d.cron);
    set("upstash-schedule-id", d.scheduleId);
    set("upstash-queue-name", d.queueName);
  }
  return h;
}

function draftOf(s: Schedule): Draft {
  const headers = Object.entries(s.header ?? {})
    .filter(([n]) => n.toLowerCase() !== "content-type")
    .flatMap(([n, vs]) => vs.map((v) => `${n}: ${v}`))
    .join("\n");
  const contentType = s.header?.["Content-Type"]?.[0] ?? EMPTY.contentType;
  const num = (n: number | undefined) => (n ? String(n) : "");
  return {
    ...EMPTY,
    destination: s.destination,
    method: s.method,
    headers,
    body: s.body ?? "",
    contentType,
    retries: String(s.retries),
    retryDelay: s.retryDelayExpression ?? "",
    delay: num(s.delay),
    timeout: num(s.timeout),
    callback: s.callback ?? "",
    failureCallback: s.failureCallback ?? "",
    queueName: s.queueName ?? "",
    flowControlKey: s.flowControlKey ?? "",
    parallelism: num(s.parallelism),
    rate: num(s.rate),
    period: num(s.period),
    labels: (s.labels ?? []).join(", "),
    cron: s.cron,
    scheduleId: s.scheduleId,
  };
}

/**
 * `#/publish` (a test message) and `#/publish/schedule[/<scheduleId>]` (a new schedule, or the
 * form filled from schedule `scheduleId` to edit it).
 */
export function RequestBuilderPage(p: {
  mode: "publish" | "schedule";
  scheduleId?: string | undefined;
}) {
  const loaded = useLoad(
    async () =>
      p.scheduleId
        ? draftOf(await queue<Schedule>(`schedules/${encodeURIComponent(p.scheduleId)}`))
        : EMPTY,
    [p.scheduleId],
  );
  const title =
    p.mode === "publish"
      ? "Publish a message"
      : p.scheduleId
        ? `Edit schedule ${p.scheduleId}`
        : "New schedule";
  return (
    <Page
      title={title}
      actions={
        <span class="tabs">
          <a href="#/publish">Publish a message</a> · <a href="#/publish/schedule">New schedule</a>
        </span>
      }
    >
      {loaded.error && <p class="error-line">{loaded.error}</p>}
      {loaded.data && (
        <Builder
          key={p.scheduleId ?? p.mode}
          mode={p.mode}
          initial={loaded.data}
          editing={p.scheduleId}
        />
      )}
    </Page>
  );
}

function Builder(p: { mode: "publish" | "schedule"; initial: Draft; editing: string | undefined }) {
  const [d, setD] = useState(p.initial);
  const [errors, setErrors] = useState<string[]>([]);
  const set = (k: keyof Draft) => (v: string) => setD((cur) => ({ ...cur, [k]: v }));
  const text = (k: keyof Draft, label: string, width = "12rem", placeholder?: string) => (
    <Field
      label={label}
      name={k}
      value={d[k]}
      onInput={set(k)}
      width={width}
      {...(placeholder ? { placeholder } : {})}
    />
  );
  const send = async () => {
    const wrong = problems(d, p.mode);
    setErrors(wrong);
    if (wrong.length > 0) throw new Error(wrong[0]);
    const headers = upstashHeaders(d, p.mode);
    const dest = d.destination.trim();
    if (p.mode === "schedule") {
      if (!(await replaceAllowed(d.scheduleId.trim(), p.editing))) return false;
      const r = await queueSend<{ scheduleId: string }>(
        "POST",
        `schedules/${dest}`,
        d.body,
        headers,
      );
      toast(`Schedule ${r.scheduleId} saved`);
      go(hrefOf.schedule(r.scheduleId));
      return true;
    }
    const path = d.queueName.trim()
      ? `enqueue/${encodeURIComponent(d.queueName.trim())}/${dest}`
      : `publish/${dest}`;
    const r = await queueSend<{ messageId: string }>("POST", path, d.body, headers);
    toast(`Published ${r.messageId}`);
    go(hrefOf.message(r.messageId));
    return true;
  };
  return (
    <ActionForm
      label={p.mode === "publish" ? "Publish" : "Save schedule"}
      run={send}
      class="builder card"
    >
      <fieldset>
        <legend>Request</legend>
        <Select
          label="Method"
          value={d.method}
          options={["POST", "PUT", "PATCH", "GET", "DELETE"].map((m) => [m, m])}
          onChange={set("method")}
        />
        {text("destination", "Destination URL", "28rem", "https://example.com/api")}
        {text("contentType", "Content type", "14rem")}
        <label class="field wide">
          <span>Headers (one "Name: value" per line)</span>
          <textarea
            name="headers"
            rows={3}
            value={d.headers}
            onInput={(e) => set("headers")((e.target as HTMLTextAreaElement).value)}
          />
        </label>
        <label class="field wide">
          <span>Body</span>
          <textarea
            name="body"
            rows={4}
            value={d.body}
            onInput={(e) => set("body")((e.target as HTMLTextAreaElement).value)}
          />
        </label>
      </fieldset>
      <fieldset>
        <legend>Delivery</legend>
        {text("retries", "Retries", "6rem", "default")}
        {text("retryDelay", "Retry delay (expression, ms)", "14rem", "1000 * (1 + retried)")}
        {text("delay", "Delay (s)", "7rem")}
        {text("timeout", "Timeout (s)", "7rem")}
        {text("queueName", "Queue", "10rem")}
        {text("labels", "Labels (comma-separated)", "14rem")}
      </fieldset>
      <fieldset>
        <legend>Callbacks</legend>
        {text("callback", "Callback URL", "20rem")}
        {text("failureCallback", "Failure callback URL", "20rem")}
      </fieldset>
      <fieldset>
        <legend>Flow control</legend>
        {text("flowControlKey", "Key", "12rem")}
        {text("parallelism", "Parallelism", "7rem")}
        {text("rate", "Rate", "6rem")}
        {text("period", "Period (s)", "7rem")}
      </fieldset>
      {p.mode === "schedule" && (
        <fieldset>
          <legend>Schedule</legend>
          {text("cron", "Cron", "10rem")}
          <span class="cron-words">
            <CronWords cron={d.cron} />
          </span>
          {text("scheduleId", "Schedule id (optional)", "14rem")}
        </fieldset>
      )}
      {errors.length > 0 && (
        <ul class="error-line problems" role="alert">
          {errors.map((e) => (
            <li key={e}>{e}</li>
          ))}
        </ul>
      )}
    </ActionForm>
  );
}

/**
 * Whether saving may replace schedule `id`: yes when it is new or the one being edited, else
 * only after a question naming what it would replace (the API replaces silently).
 */
async function replaceAllowed(id: string, editing: string | undefined): Promise<boolean> {
  if (!id || id === editing) return true;
  let old: Schedule;
  try {
    old = await queue<Schedule>(`schedules/${encodeURIComponent(id)}`);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return true;
    throw err;
  }
  return window.confirm(`Schedule ${id} exists (${old.cron} → ${old.destination}). Replace it?`);
}
