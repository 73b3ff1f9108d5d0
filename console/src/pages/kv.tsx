import { useEffect, useRef, useState } from "preact/hooks";
import { get, kvWrite, query } from "../api.js";
import { href, navigate } from "../routes.js";
import { Action, Badge, Field, fmtTtl, Form, Page, Select, Table, toast } from "../ui.js";
import { CommandBox } from "./kv-command.js";
import { KeyDetail } from "./kv-key.js";

interface KeyRow {
  key: string;
  type: string;
  ttl: number;
}

const TYPES: [string, string][] = [
  ["", "any type"],
  ["string", "string"],
  ["hash", "hash"],
  ["list", "list"],
  ["set", "set"],
  ["zset", "sorted set"],
  ["stream", "stream"],
  ["ReJSON-RL", "JSON (module)"],
];

/**
 * The data browser of one database: keys by pattern and type, paged with SCAN's cursor on the
 * server (a page is 100 keys whatever the keyspace's size), the selected key's value to view and
 * edit, and a command box. The URL holds the search (`#/kv/<db>?match=user:*&type=hash`) and the
 * key open (`#/kv/<db>/key/<key>`).
 */
export function KvPage(p: { db: string; selected: string | undefined; params: URLSearchParams }) {
  const search = { match: p.params.get("match") || "*", type: p.params.get("type") ?? "" };
  const searchParams = { match: search.match === "*" ? "" : search.match, type: search.type };
  const [pattern, setPattern] = useState(search.match);
  const [type, setType] = useState(search.type);
  const [rows, setRows] = useState<KeyRow[]>([]);
  const [cursor, setCursor] = useState<string>("0");
  const [error, setError] = useState<string | undefined>();
  const [loading, setLoading] = useState(false);
  const selected = p.selected;
  const setSelected = (key: string | undefined) =>
    navigate(
      key === undefined
        ? href.kv(p.db, searchParams)
        : href.kvKey(p.db, key) + href.kv(p.db, searchParams).replace(/^[^?]*/, ""),
    );
  const [creating, setCreating] = useState(false);
  const base = `kv/${encodeURIComponent(p.db)}`;

  // Only the newest scan may fill the list (an older one can answer later).
  const latest = useRef(0);
  const load = async (from: string, append: boolean) => {
    const mine = ++latest.current;
    setLoading(true);
    setError(undefined);
    try {
      const page = await get<{ cursor: string; keys: KeyRow[] }>(
        `${base}/scan${query({ cursor: from, match: search.match, type: search.type })}`,
      );
      if (mine !== latest.current) return;
      setRows((old) => (append ? [...old, ...page.keys] : page.keys));
      setCursor(page.cursor);
    } catch (err) {
      if (mine !== latest.current) return;
      setRows([]); // never keys under an error: they may be gone or from another search
      setCursor("0");
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => void load("0", false), [search.match, search.type, p.db]);
  const refresh = () => void load("0", false);

  return (
    <Page
      title={`KV · ${p.db}`}
      actions={
        <button type="button" class="btn primary" onClick={() => setCreating(!creating)}>
          New key
        </button>
      }
      side={
        selected !== undefined && (
          <KeyDetail
            key={selected}
            db={p.db}
            name={selected}
            onClose={() => setSelected(undefined)}
            onDeleted={() => {
              setSelected(undefined);
              refresh();
            }}
          />
        )
      }
    >
      {creating && (
        <NewKey
          db={p.db}
          onCreated={(k) => {
            setCreating(false);
            setSelected(k);
            refresh();
          }}
        />
      )}
      <Form
        onSubmit={() => navigate(href.kv(p.db, { match: pattern === "*" ? "" : pattern, type }))}
      >
        <Field label="Pattern" value={pattern} onInput={setPattern} width="18rem" name="pattern" />
        <Select label="Type" value={type} options={TYPES} onChange={setType} />
        <button type="submit" class="btn primary">
          Scan
        </button>
      </Form>
      <Table
        error={error}
        label="keys"
        rows={rows}
        rowKey={(r) => r.key}
        selected={selected}
        onRow={(r) => setSelected(r.key)}
        empty={
          loading ? "Scanning…" : cursor === "0" ? "No matching keys." : "None yet: load more."
        }
        columns={[
          { title: "Key", render: (r) => <code class="key">{r.key}</code> },
          { title: "Type", render: (r) => <Badge text={r.type} /> },
          { title: "TTL", render: (r) => fmtTtl(r.ttl), class: "nowrap" },
        ]}
      />
      <div class="pager">
        <span>{`${rows.length.toLocaleString("en-US")} ${rows.length === 1 ? "key" : "keys"} shown`}</span>
        <button
          type="button"
          class="btn plain"
          disabled={cursor === "0" || loading}
          onClick={() => void load(cursor, true)}
        >
          {cursor === "0" ? "Scan complete" : "Load more"}
        </button>
      </div>
      <CommandBox db={p.db} />
    </Page>
  );
}

const NEW_TYPES: [string, string][] = [
  ["string", "string"],
  ["hash", "hash"],
  ["list", "list"],
  ["set", "set"],
  ["zset", "sorted set"],
  ["stream", "stream"],
  ["json", "JSON"],
];

/** The first write that creates a key of each type. */
function createCommand(type: string, key: string, field: string, value: string): string[] {
  switch (type) {
    case "hash":
      return ["HSET", key, field, value];
    case "list":
      return ["RPUSH", key, value];
    case "set":
      return ["SADD", key, value];
    case "zset":
      return ["ZADD", key, value || "0", field];
    case "stream":
      return ["XADD", key, "*", field, value];
    case "json":
      return ["JSON.SET", key, "$", value];
    default:
      return ["SET", key, value];
  }
}

function NewKey(p: { db: string; onCreated: (key: string) => void }) {
  const [type, setType] = useState("string");
  const [key, setKey] = useState("");
  const [field, setField] = useState("");
  const [value, setValue] = useState("");
  const needsField = type === "hash" || type === "zset" || type === "stream";
  const create = async () => {
    if (!key) return toast("a key name is needed", "error");
    try {
      const [exists] = await kvWrite(p.db, ["EXISTS", key]);
      if (exists === 1) return toast(`${key} already exists`, "error");
      await kvWrite(p.db, createCommand(type, key, field, value));
      toast(`Created ${key}`);
      p.onCreated(key);
    } catch (err) {
      toast(err instanceof Error ? err.message : String(err), "error");
    }
  };
  return (
    <Form onSubmit={() => void create()} class="bar card">
      <Select label="New key type" value={type} options={NEW_TYPES} onChange={setType} />
      <Field label="Key" value={key} onInput={setKey} name="new-key" />
      {needsField && (
        <Field
          label={type === "zset" ? "Member" : "Field"}
          value={field}
          onInput={setField}
          name="new-field"
        />
      )}
      <Field
        label={type === "zset" ? "Score" : "Value"}
        value={value}
        onInput={setValue}
        name="new-value"
        width="18rem"
      />
      <Action label="Create" kind="primary" run={create} />
    </Form>
  );
}
