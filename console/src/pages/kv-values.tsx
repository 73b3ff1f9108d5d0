import { useState } from "preact/hooks";
import { flatReply } from "../api.js";
import { Action, ActionForm, Pre } from "../ui.js";
import type { KeyView } from "./kv-key.js";

type Write = (...commands: string[][]) => Promise<void>;
/** Runs `writes` only if `read` still answers `expected` (api.ts kvCompareAndWrite). */
type CompareAndWrite = (read: string[], expected: string, ...writes: string[][]) => Promise<void>;

/** A value no list element holds: an element removed by index is first set to it. */
const removedMark = () => `\u0000stashd-console-removed-${crypto.randomUUID()}`;

/**
 * The value of a key, editable in the way its type allows. Every edit or removal of something the
 * page shows (a string, a JSON document, a hash field, a list element, a set member, a score, a
 * stream entry) is a compare-and-write: when it changed since it was loaded nothing is written
 * (the caller says so). List elements go by index. Adding (a field, member, element, entry) is a
 * plain write, except that a hash field or set member that exists already is refused.
 */
export function ValueEditor(p: { view: KeyView; write: Write; cas: CompareAndWrite }) {
  const { view, write, cas } = p;
  const k = view.key;
  switch (view.type) {
    case "string":
      return (
        <StringEditor
          // A refreshed value restarts the editor from it.
          key={String(view.value ?? "")}
          value={String(view.value ?? "")}
          binary={view.encoding === "hex"}
          length={view.length}
          shownBytes={view.shownBytes ?? view.length}
          save={(v) => cas(["GET", k], String(view.value ?? ""), ["SET", k, v, "KEEPTTL"])}
        />
      );
    case "ReJSON-RL":
      return (
        <JsonEditor
          key={String(view.value ?? "")}
          value={String(view.value ?? "[]")}
          save={(v) => cas(["JSON.GET", k, "$"], String(view.value ?? ""), ["JSON.SET", k, "$", v])}
        />
      );
    case "hash":
      return (
        <Rows
          kind="hash"
          rows={(view.value as [Member, Member][]).map(([f, v]) => row(f, f, v))}
          labels={["Field", "Value"]}
          save={(r, v) => cas(["HGET", k, r.id], r.value, ["HSET", k, r.id, v])}
          remove={(r) => cas(["HGET", k, r.id], r.value, ["HDEL", k, r.id])}
          add={(f, v) => {
            if (f === "") throw new Error("a hash field needs a name");
            // HEXISTS answers 0 while the field is new: a field that appeared meanwhile is kept.
            return cas(["HEXISTS", k, f], "0", ["HSET", k, f, v]);
          }}
        />
      );
    case "list":
      return (
        <Rows
          kind="list"
          rows={(view.value as Member[]).map((v, i) => row(String(i), String(i), v))}
          labels={["Index", "Value"]}
          save={(r, v) => cas(["LINDEX", k, r.id], r.value, ["LSET", k, r.id, v])}
          remove={(r) => {
            const mark = removedMark();
            return cas(
              ["LINDEX", k, r.id],
              r.value,
              ["LSET", k, r.id, mark],
              ["LREM", k, "1", mark],
            );
          }}
          add={(_f, v) => write(["RPUSH", k, v])}
          addField={false}
        />
      );
    case "set":
      return (
        <Rows
          kind="set"
          rows={(view.value as Member[]).map((m) => row(m, m, ""))}
          labels={["Member", ""]}
          remove={(r) => cas(["SISMEMBER", k, r.id], "1", ["SREM", k, r.id])}
          add={(f) => write(["SADD", k, f])}
          addValue={false}
        />
      );
    case "zset":
      return (
        <Rows
          kind="zset"
          rows={(view.value as [Member, Member][]).map(([m, s]) => row(m, m, s))}
          labels={["Member", "Score"]}
          save={(r, v) => cas(["ZSCORE", k, r.id], r.value, ["ZADD", k, checkScore(v), r.id])}
          remove={(r) => cas(["ZSCORE", k, r.id], r.value, ["ZREM", k, r.id])}
          add={(m, s) => write(["ZADD", k, checkScore(s || "0"), m])}
        />
      );
    case "stream":
      return (
        <Rows
          kind="stream"
          rows={(view.value as [string, [Member, Member][]][]).map(([id, fields]) => {
            const binary = fields.flat().some((m) => typeof m !== "string");
            const shown = fields.map(([f, v]) => `${textOf(f)}=${textOf(v)}`).join("  ");
            return { ...row(id, id, shown), binary, entry: flatReply([[id, fields]]) };
          })}
          labels={["Entry id", "Fields"]}
          remove={(r) => cas(["XRANGE", k, r.id, r.id], r.entry ?? "", ["XDEL", k, r.id])}
          add={(f, v) => write(["XADD", k, "*", f, v])}
          readOnlyValues
        />
      );
    default:
      return <Pre value={view.value} />;
  }
}

/**
 * A string value (sizes in bytes, as STRLEN counts them); one that is JSON can be re-formatted
 * before saving. A value cut at the size limit, or binary (not UTF-8, shown as hex), is read-only.
 */
function StringEditor(p: {
  value: string;
  binary: boolean;
  length: number;
  shownBytes: number;
  save: (v: string) => Promise<void>;
}) {
  const [text, setText] = useState(p.value);
  const cut = p.shownBytes < p.length;
  const readOnly = cut || p.binary;
  return (
    <div class="editor">
      <h3>Value</h3>
      {p.binary && <p class="hint">Binary value (not UTF-8), shown as hex; read-only.</p>}
      {cut && (
        <p class="hint">
          Showing the first {p.shownBytes.toLocaleString("en-US")} of{" "}
          {p.length.toLocaleString("en-US")} bytes; saving is off.
        </p>
      )}
      <textarea
        name="value"
        rows={8}
        value={text}
        readOnly={readOnly}
        class={p.binary ? "hex" : undefined}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
      />
      <div class="bar">
        <Action
          label="Save"
          kind="primary"
          disabled={readOnly || text === p.value}
          done="Saved"
          run={() => p.save(text)}
        />
        {!readOnly && isJson(text) && (
          <button
            type="button"
            class="btn plain"
            onClick={() => setText(JSON.stringify(JSON.parse(text), null, 2))}
          >
            Format JSON
          </button>
        )}
      </div>
    </div>
  );
}

/** A RedisJSON document (JSON.GET $ replies with an array of the one root). */
function JsonEditor(p: { value: string; save: (v: string) => Promise<void> }) {
  const root = (() => {
    try {
      const parsed: unknown = JSON.parse(p.value);
      return JSON.stringify(Array.isArray(parsed) ? parsed[0] : parsed, null, 2);
    } catch {
      return p.value;
    }
  })();
  const [text, setText] = useState(root);
  return (
    <div class="editor">
      <h3>JSON document</h3>
      <textarea
        name="value"
        rows={12}
        value={text}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
      />
      <Action
        label="Save"
        kind="primary"
        disabled={!isJson(text)}
        done="Saved"
        run={() => p.save(text)}
      />
    </div>
  );
}

function isJson(text: string): boolean {
  const t = text.trim();
  if (!t.startsWith("{") && !t.startsWith("[")) return false;
  try {
    JSON.parse(t);
    return true;
  } catch {
    return false;
  }
}

/**
 * A member as GET .../key sends it: its text when UTF-8, else `{hex}` of its bytes (a binary
 * member is shown as hex and cannot be edited: the REST API's JSON carries text only).
 */
type Member = string | { hex: string };

const textOf = (m: Member): string => (typeof m === "string" ? m : m.hex);

/** A table row of a member: `id` names it in commands, `label` and `value` are shown. */
function row(id: Member, label: Member, value: Member): Row {
  const binary = [id, label, value].some((m) => typeof m !== "string");
  return { id: textOf(id), label: textOf(label), value: textOf(value), binary };
}

interface Row {
  id: string;
  label: string;
  value: string;
  /** Some of it is not UTF-8: shown as hex, read-only. */
  binary: boolean;
  /** Streams: the entry as XRANGE answers it, flattened (flatReply), to compare before XDEL. */
  entry?: string;
}

/** A sorted-set score as typed: a number (or ±inf), trimmed; else an error saying so. */
export function checkScore(text: string): string {
  const t = text.trim();
  if (!/^[+-]?(inf|\d+(\.\d*)?([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)$/i.test(t)) {
    throw new Error(`a score must be a number, not "${text}"`);
  }
  return t;
}

/** Members of a collection, each with its own save/remove, and a row to add one. */
function Rows(p: {
  kind: string;
  rows: Row[];
  labels: [string, string];
  save?: (r: Row, v: string) => Promise<void>;
  remove: (r: Row) => Promise<void>;
  add: (field: string, value: string) => Promise<void>;
  addField?: boolean;
  addValue?: boolean;
  readOnlyValues?: boolean;
}) {
  const [field, setField] = useState("");
  const [value, setValue] = useState("");
  const addField = p.addField ?? true;
  const addValue = p.addValue ?? true;
  return (
    <div class="editor">
      <table class="grid members" aria-label={`${p.kind} members`}>
        <thead>
          <tr>
            <th>{p.labels[0]}</th>
            <th>{p.labels[1]}</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {p.rows.map((r) => (
            <MemberRow
              // A refreshed value is a new row: the input restarts from it.
              key={`${r.id}\u0000${r.value}`}
              row={r}
              save={p.readOnlyValues ? undefined : p.save}
              remove={p.remove}
            />
          ))}
        </tbody>
      </table>
      <ActionForm
        class="bar"
        label="Add"
        kind="plain"
        done="Added"
        run={async () => {
          await p.add(field, value);
          setField("");
          setValue("");
        }}
      >
        {addField && (
          <input
            name="add-field"
            placeholder={p.kind === "zset" ? "member" : p.kind === "set" ? "member" : "field"}
            value={field}
            onInput={(e) => setField((e.target as HTMLInputElement).value)}
          />
        )}
        {addValue && (
          <input
            name="add-value"
            placeholder={p.kind === "zset" ? "score" : "value"}
            value={value}
            onInput={(e) => setValue((e.target as HTMLInputElement).value)}
          />
        )}
      </ActionForm>
    </div>
  );
}

function MemberRow(p: {
  row: Row;
  save: ((r: Row, v: string) => Promise<void>) | undefined;
  remove: (r: Row) => Promise<void>;
}) {
  const [value, setValue] = useState(p.row.value);
  const binary = p.row.binary;
  const save = binary ? undefined : p.save;
  return (
    <tr class={binary ? "binary" : undefined}>
      <td>
        <code>{p.row.label}</code>
        {binary && (
          <span class="hint" title="not UTF-8: shown as hex, read-only">
            {" "}
            hex
          </span>
        )}
      </td>
      <td>
        {save ? (
          <input
            aria-label={`value of ${p.row.label}`}
            value={value}
            onInput={(e) => setValue((e.target as HTMLInputElement).value)}
          />
        ) : (
          <span class="mono">{p.row.value}</span>
        )}
      </td>
      <td class="nowrap">
        {save && (
          <Action
            label="Save"
            disabled={value === p.row.value}
            done="Saved"
            run={() => save(p.row, value)}
          />
        )}
        <Action
          label="Remove"
          kind="danger"
          done="Removed"
          disabled={binary}
          title={binary ? "binary (not UTF-8): read-only here; use redis-cli" : undefined}
          run={() => p.remove(p.row)}
        />
      </td>
    </tr>
  );
}
