import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { get, kvWrite, query, request } from "../api.js";
import { href, navigate } from "../routes.js";
import {
  Action,
  Badge,
  Field,
  fmtBytes,
  fmtCount,
  fmtTtl,
  Form,
  Page,
  Select,
  Table,
  toast,
} from "../ui.js";
import { CommandBox } from "./kv-command.js";
import type { DataSize } from "../data-level.js";
import { DataMeter } from "./kv-data.js";
import { KeyDetail } from "./kv-key.js";
import { globUnder, NamespaceTree, useSeparator } from "./kv-tree.js";

interface KeyRow {
  key: string;
  type: string;
  ttl: number;
  size: number | null;
}

/** How much of the keyspace the scans so far visited (GET .../scan's `scanned` and `total`). */
interface Progress {
  scanned: number;
  total: number;
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
export function KvPage(p: {
  db: string;
  selected: string | undefined;
  params: URLSearchParams;
  /** The database's data size from the live summary (undefined until one came). */
  data: DataSize | undefined;
}) {
  const search = { match: p.params.get("match") || "*", type: p.params.get("type") ?? "" };
  const searchParams = { match: search.match === "*" ? "" : search.match, type: search.type };
  const [pattern, setPattern] = useState(search.match);
  const [type, setType] = useState(search.type);
  // The form follows the URL (a namespace picked, back/forward).
  useEffect(() => {
    setPattern(search.match);
    setType(search.type);
  }, [search.match, search.type]);
  const [separator, setSeparator] = useSeparator();
  const [progress, setProgress] = useState<Progress>({ scanned: 0, total: 0 });
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
      const page = await get<{ cursor: string; keys: KeyRow[] } & Progress>(
        `${base}/scan${query({ cursor: from, match: search.match, type: search.type })}`,
      );
      if (mine !== latest.current) return;
      setRows((old) => (append ? [...old, ...page.keys] : page.keys));
      setCursor(page.cursor);
      setProgress((old) => ({
        scanned: Math.min((append ? old.scanned : 0) + page.scanned, page.total),
        total: page.total,
      }));
    } catch (err) {
      if (mine !== latest.current) return;
      setRows([]); // never keys under an error: they may be gone or from another search
      setCursor("0");
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setLoading(false);
    }
  };
  // At mount, not a frame later (bench/console.ts): the keys are the page's first render.
  useLayoutEffect(() => void load("0", false), [search.match, search.type, p.db]);
  const refresh = () => void load("0", false);
  const goSearch = (match: string, t: string) =>
    navigate(href.kv(p.db, { match: match === "*" ? "" : match, type: t }));

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
      <DataMeter data={p.data} />
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
      <div class="kv-layout">
        <NamespaceTree
          db={p.db}
          separator={separator}
          onSeparator={setSeparator}
          onPick={(prefix) => goSearch(globUnder(prefix), type)}
        />
        <div class="kv-keys">
          <Form onSubmit={() => goSearch(pattern || "*", type)}>
            <Field
              label="Pattern"
              value={pattern}
              onInput={setPattern}
              width="18rem"
              name="pattern"
            />
            <Select label="Type" value={type} options={TYPES} onChange={setType} />
            <button type="submit" class="btn primary">
              Scan
            </button>
            <DeleteMatching db={p.db} match={search.match} onDone={refresh} />
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
              { title: "Size", render: (r) => fmtBytes(r.size), class: "nowrap num" },
              { title: "TTL", render: (r) => fmtTtl(r.ttl), class: "nowrap" },
            ]}
          />
          <div class="pager">
            <span data-scan-progress>
              {`${fmtCount(rows.length)} ${rows.length === 1 ? "key" : "keys"} shown · scanned about ${fmtCount(progress.scanned)} of ${fmtCount(progress.total)} keys`}
              {cursor === "0" && !loading ? " (complete)" : ""}
            </span>
            <button
              type="button"
              class="btn plain"
              disabled={cursor === "0" || loading}
              onClick={() => void load(cursor, true)}
            >
              {cursor === "0" ? "Scan complete" : "Load more"}
            </button>
          </div>
        </div>
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

/**
 * "Delete matching": counts the keys the pattern matches (the whole keyspace, on the server),
 * asks with that count, then deletes them and says how many went.
 */
function DeleteMatching(p: { db: string; match: string; onDone: () => void }) {
  const path = `kv/${encodeURIComponent(p.db)}/delete-matching`;
  return (
    <Action
      label="Delete matching…"
      kind="danger"
      title={`Delete every key matching ${p.match}, after showing how many`}
      run={async () => {
        const plan = await request<{ count: number; sample: string[] }>("POST", path, {
          match: p.match,
          dryRun: true,
        });
        if (plan.count === 0) {
          toast(`No keys match ${p.match}`);
          return false;
        }
        const sample = plan.sample.slice(0, 5).join(", ");
        const question = `Delete ${fmtCount(plan.count)} ${plan.count === 1 ? "key" : "keys"} matching ${p.match} (${sample}${plan.count > 5 ? ", …" : ""})? This cannot be undone.`;
        if (!window.confirm(question)) return false;
        const r = await request<{ deleted: number }>("POST", path, { match: p.match });
        toast(`${fmtCount(r.deleted)} ${r.deleted === 1 ? "key" : "keys"} deleted`);
        p.onDone();
        return true;
      }}
    />
  );
}
