import { useState } from "preact/hooks";
import type { Arg } from "../api.js";
import { Action, ActionForm, Pre } from "../ui.js";
import type { KeyView } from "./kv-key.js";

type Write = (...commands: Arg[][]) => Promise<void>;
/** Runs `writes` only if `read` still answers `expected` (api.ts kvEdit). */
type CompareAndWrite = (read: Arg[], expected: Arg, ...writes: Arg[][]) => Promise<void>;

/** A value no list element holds: an element removed by index is first set to it. */
const removedMark = () => `\u0000stashd-console-removed-${crypto.randomUUID()}`;

/**
 * The value of a key, editable in the way its type allows. Every edit or removal of something the
 * page shows (a string, a JSON document, a hash field, a list element, a set member, a score, a
 * stream entry) is a compare-and-write: when it changed since it was loaded nothing is written
 * (the caller says so). List elements go by index. Adding (a field, member, element, entry) is a
 * plain write, except that a hash field that exists already is refused. Members that are not
 * UTF-8 are shown as hex and edited as hex, and every command carries their exact bytes.
 */
export function ValueEditor(p: { view: KeyView; write: Write; cas: CompareAndWrite }) {
  const { view, write, cas } = p;
  const k = view.key;
  switch (view.type) {
    case "string": {
      const shown = String(view.value ?? "");
      const binary = view.encoding === "hex";
      return (
        <StringEditor
          // A refreshed value restarts the editor from it.
          key={shown}
          value={shown}
          binary={binary}
          length={view.length}
          shownBytes={view.shownBytes ?? view.length}
          save={(v) =>
            cas(["GET", k], typed(shown, binary), ["SET", k, typed(v, binary), "KEEPTTL"])
          }
        />
      );
    }
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
          rows={(view.value as [Member, Member][]).map(([f, v]) => ({ id: f, label: f, value: v }))}
          labels={["Field", "Value"]}
          save={(r, v) => cas(["HGET", k, r.id], r.value, ["HSET", k, r.id, v])}
          remove={(r) => cas(["HGET", k, r.id], r.value, ["HDEL", k, r.id])}
          add={(f, v) => {
            if (isEmpty(f)) throw new Error("a hash field needs a name");
            // HEXISTS answers 0 while the field is new: a field that appeared meanwhile is kept.
            return cas(["HEXISTS", k, f], "0", ["HSET", k, f, v]);
          }}
        />
      );
    case "list":
      return (
        <Rows
          kind="list"
          rows={(view.value as Member[]).map((v, i) => ({
            id: String(i),
            label: String(i),
            value: v,
          }))}
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
          rows={(view.value as Member[]).map((m) => ({ id: m, label: m, value: "" }))}
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
          rows={(view.value as [Member, Member][]).map(([m, s]) => ({ id: m, label: m, value: s }))}
          labels={["Member", "Score"]}
          save={(r, v) =>
            cas(["ZSCORE", k, r.id], r.value, ["ZADD", k, checkScore(textOf(v)), r.id])
          }
          remove={(r) => cas(["ZSCORE", k, r.id], r.value, ["ZREM", k, r.id])}
          add={(m, s) => write(["ZADD", k, checkScore(textOf(s) || "0"), m])}
          textValues
        />
      );
    case "stream":
      return (
        <Rows
          kind="stream"
          rows={(view.value as [string, [Member, Member][]][]).map(([id, fields]) => {
            const shown = fields.map(([f, v]) => `${textOf(f)}=${textOf(v)}`).join("  ");
            const hexParts = fields.flat().some(isBinary);
            return { id, label: id, value: shown, entry: flatEntry(id, fields), hexParts };
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
 * before saving. A binary value (not UTF-8) is shown and edited as hex; a value cut at the size
 * limit is read-only.
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
  const readOnly = cut;
  return (
    <div class="editor">
      <h3>Value</h3>
      {p.binary && (
        <p class="hint">
          Binary value (not UTF-8), shown and edited as hex: two digits a byte, spaces ignored.
        </p>
      )}
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
        {!readOnly && !p.binary && isJson(text) && (
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

/** A member as GET .../key sends it: its text when UTF-8, else `{hex}` of its bytes. */
type Member = Arg;

const isBinary = (m: Member): m is { hex: string } => typeof m !== "string";

/** How a member is shown and edited: its text, or the hex of its bytes. */
const textOf = (m: Member): string => (typeof m === "string" ? m : m.hex);

const isEmpty = (m: Member): boolean => textOf(m) === "";

/** Hex as typed, whitespace ignored: pairs of hex digits; else an error saying so. */
export function checkHex(text: string): string {
  const hex = text.replace(/\s+/g, "").toLowerCase();
  if (!/^(?:[0-9a-f]{2})*$/.test(hex)) {
    throw new Error(`hex must be pairs of digits 0-9 a-f (two a byte), not "${text}"`);
  }
  return hex;
}

/** A value as typed into an editor showing hex (`hex`) or text. */
const typed = (text: string, hex: boolean): Member => (hex ? { hex: checkHex(text) } : text);

/** The bytes of a member, as hex. */
const hexOf = (m: Member): string =>
  isBinary(m)
    ? m.hex
    : Array.from(new TextEncoder().encode(m), (b) => b.toString(16).padStart(2, "0")).join("");

/**
 * A stream entry as kv-edit.lua compares XRANGE's reply: its id and fields' bytes in order,
 * joined by a NUL byte.
 */
const flatEntry = (id: string, fields: [Member, Member][]): Member => ({
  hex: [id, ...fields.flat()].map(hexOf).join("00"),
});

/** A table row of a member: `id` names it in commands, `label` and `value` are shown. */
interface Row {
  id: Member;
  label: Member;
  /** The value shown; an edit compares it with Redis's before it writes. */
  value: Member;
  /** Streams: the entry as XRANGE answers it, to compare before XDEL. */
  entry?: Member;
  /** Streams: some field or value is not UTF-8 and shown as hex. */
  hexParts?: boolean;
}

/** A sorted-set score as typed: a number (or ±inf), trimmed; else an error saying so. */
export function checkScore(text: string): string {
  const t = text.trim();
  if (!/^[+-]?(inf|\d+(\.\d*)?([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)$/i.test(t)) {
    throw new Error(`a score must be a number, not "${text}"`);
  }
  return t;
}

/**
 * Members of a collection, each with its own save/remove, and a row to add one. The add row's
 * "hex" box reads what is typed as hex bytes (a score, `textValues`, stays a number).
 */
function Rows(p: {
  kind: string;
  rows: Row[];
  labels: [string, string];
  save?: (r: Row, v: Member) => Promise<void>;
  remove: (r: Row) => Promise<void>;
  add: (field: Member, value: Member) => Promise<void>;
  addField?: boolean;
  addValue?: boolean;
  readOnlyValues?: boolean;
  /** Values are always text (scores, stream fields shown together). */
  textValues?: boolean;
  /** Offer the add row's "hex" box (default true). */
  hexAdd?: boolean;
}) {
  const [field, setField] = useState("");
  const [value, setValue] = useState("");
  const [hex, setHex] = useState(false);
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
              key={`${hexOf(r.id)}\u0000${hexOf(r.value)}`}
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
          await p.add(typed(field, hex), p.textValues ? value : typed(value, hex));
          setField("");
          setValue("");
        }}
      >
        {addField && (
          <input
            name="add-field"
            placeholder={p.kind === "zset" || p.kind === "set" ? "member" : "field"}
            value={field}
            class={hex ? "hex" : undefined}
            onInput={(e) => setField((e.target as HTMLInputElement).value)}
          />
        )}
        {addValue && (
          <input
            name="add-value"
            placeholder={p.kind === "zset" ? "score" : "value"}
            value={value}
            class={hex && !p.textValues ? "hex" : undefined}
            onInput={(e) => setValue((e.target as HTMLInputElement).value)}
          />
        )}
        {(p.hexAdd ?? true) && (
          <label class="hint nowrap">
            <input
              type="checkbox"
              name="add-hex"
              checked={hex}
              onChange={(e) => setHex((e.target as HTMLInputElement).checked)}
            />{" "}
            hex
          </label>
        )}
      </ActionForm>
    </div>
  );
}

/** A "hex" mark beside a member shown as the hex of its bytes. */
const HexMark = () => (
  <span
    class="hint"
    title="not UTF-8 (or text with a carriage return): shown and edited as hex, two digits a byte"
  >
    {" "}
    hex
  </span>
);

function MemberRow(p: {
  row: Row;
  save: ((r: Row, v: Member) => Promise<void>) | undefined;
  remove: (r: Row) => Promise<void>;
}) {
  const { row, save } = p;
  const shown = textOf(row.value);
  // Text with a carriage return is edited as hex when editable: a <textarea> turns "\r\n" and
  // "\r" into "\n", and an <input> drops line breaks, so either would change bytes not edited.
  const hexValue = isBinary(row.value) || (save !== undefined && shown.includes("\r"));
  const initial = hexValue ? hexOf(row.value) : shown;
  const [value, setValue] = useState(initial);
  const label = `value of ${textOf(row.label)}`;
  const onInput = (e: Event) => setValue((e.target as HTMLInputElement).value);
  return (
    <tr class={isBinary(row.label) || hexValue || row.hexParts ? "binary" : undefined}>
      <td>
        <code>{textOf(row.label)}</code>
        {isBinary(row.label) && <HexMark />}
      </td>
      <td>
        {save && !hexValue && shown.includes("\n") ? (
          <textarea
            aria-label={label}
            value={value}
            rows={Math.min(shown.split("\n").length, 6)}
            onInput={onInput}
          />
        ) : save ? (
          <input
            aria-label={label}
            value={value}
            class={hexValue ? "hex" : undefined}
            onInput={onInput}
          />
        ) : (
          <span class="mono">{shown}</span>
        )}
        {(hexValue || row.hexParts) && <HexMark />}
      </td>
      <td class="nowrap">
        {save && (
          <Action
            label="Save"
            disabled={value === initial}
            done="Saved"
            run={() => save(row, typed(value, hexValue))}
          />
        )}
        <Action label="Remove" kind="danger" done="Removed" run={() => p.remove(row)} />
      </td>
    </tr>
  );
}
