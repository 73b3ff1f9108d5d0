import { useEffect, useRef, useState } from "preact/hooks";
import { ChangedError, get, kvEdit, kvWrite, query, type Arg } from "../api.js";
import { Action, ActionForm, ErrorLine, Facts, fmtTtl, messageOf, Panel } from "../ui.js";
import { ValueEditor } from "./kv-values.js";

/** GET /console/api/kv/<db>/key: one page of a key's value (see src/admin/console/kv-browse.ts). */
export interface KeyView {
  key: string;
  type: string;
  ttl: number;
  length: number;
  cursor: string;
  value: unknown;
  /** Strings: "hex" when the value is binary (not UTF-8) and shown as hex. */
  encoding?: "utf8" | "hex";
  /** Strings: the bytes of the value shown (fewer than `length` when cut). */
  shownBytes?: number;
}

/**
 * The selected key: facts, TTL, delete, and the value editor of its type (members paged with
 * "Load more"). Refresh (and every write) reloads as many pages as are shown, so an edit on the
 * second page stays there. Edits compare before they write: when the value changed since it was
 * loaded, nothing is written and the panel says so until refreshed.
 */
export function KeyDetail(p: {
  db: string;
  name: string;
  onClose: () => void;
  onDeleted: () => void;
}) {
  const [view, setView] = useState<KeyView | undefined>();
  const [pages, setPages] = useState(1);
  const [error, setError] = useState<string | undefined>();
  const [stale, setStale] = useState(false);
  const base = `kv/${encodeURIComponent(p.db)}/key`;
  const page = (cursor: string) => get<KeyView>(`${base}${query({ key: p.name, cursor })}`);
  // Only the newest reload may fill the panel (an older one can answer later, with older data).
  const latest = useRef(0);
  /** Loads the first `count` pages again (fewer if the value shrank). */
  const reload = async (count = pages) => {
    const mine = ++latest.current;
    try {
      let next = await page("0");
      let loaded = 1;
      while (loaded < count && next.cursor !== "" && next.cursor !== "0") {
        const more = await page(next.cursor);
        next = { ...more, value: mergePages(next.value, more.value) };
        loaded++;
      }
      if (mine !== latest.current) return;
      setView(next);
      setPages(loaded);
      setError(undefined);
      setStale(false);
    } catch (err) {
      if (mine !== latest.current) return;
      setView(undefined); // an error never sits above a value that may be stale
      setError(messageOf(err));
    }
  };
  const loadMore = async (cursor: string) => {
    try {
      const more = await page(cursor);
      setView((old) => (old ? { ...more, value: mergePages(old.value, more.value) } : more));
      setPages((n) => n + 1);
    } catch (err) {
      setError(messageOf(err));
    }
  };
  useEffect(() => void reload(1), [p.db, p.name]);
  const write = async (...commands: Arg[][]) => {
    await kvEdit(p.db, p.name, commands);
    await reload();
  };
  const cas = async (read: Arg[], expected: Arg, ...writes: Arg[][]) => {
    try {
      await kvEdit(p.db, p.name, writes, { read, expected });
    } catch (err) {
      if (err instanceof ChangedError) setStale(true);
      throw err;
    }
    await reload();
  };
  const more = view && view.cursor !== "" && view.cursor !== "0";
  return (
    <Panel title={p.name} onClose={p.onClose}>
      <ErrorLine error={error} />
      {stale && (
        <p class="error-line" data-stale>
          This value changed since it was loaded; nothing was written. Refresh to see the current
          value.
        </p>
      )}
      {view && (
        <>
          <Facts
            items={[
              ["Type", view.type],
              [
                "Size",
                `${view.length.toLocaleString("en-US")} ${view.type === "string" ? (view.length === 1 ? "byte" : "bytes") : view.length === 1 ? "entry" : "entries"}`,
              ],
              ["TTL", <span data-ttl>{fmtTtl(view.ttl)}</span>],
            ]}
          />
          <TtlEditor
            ttl={view.ttl}
            onSet={(s) => write(["EXPIRE", p.name, s])}
            onPersist={() => write(["PERSIST", p.name])}
          />
          <div class="bar">
            <Action label="Refresh" done="Refreshed" run={() => reload()} />
            <Action
              label="Delete key"
              kind="danger"
              confirm={`Delete ${p.name}?`}
              done={`Deleted ${p.name}`}
              run={async () => {
                await kvWrite(p.db, ["DEL", p.name]);
                p.onDeleted();
              }}
            />
          </div>
          <ValueEditor view={view} write={write} cas={cas} />
          {more && (
            <button type="button" class="btn plain" onClick={() => void loadMore(view.cursor)}>
              Load more
            </button>
          )}
        </>
      )}
    </Panel>
  );
}

function mergePages(a: unknown, b: unknown): unknown {
  return Array.isArray(a) && Array.isArray(b) ? [...a, ...b] : b;
}

/** Set a TTL (Enter in the field sets it; 0 asks first, as it deletes the key) or persist. */
function TtlEditor(p: {
  ttl: number;
  onSet: (s: string) => Promise<void>;
  onPersist: () => Promise<void>;
}) {
  const [secs, setSecs] = useState("");
  const typed = secs.trim();
  return (
    <div class="bar">
      <ActionForm
        class="bar inline"
        label="Set TTL"
        kind="plain"
        disabled={!/^\d+$/.test(typed)}
        title="a whole number of seconds"
        confirm={Number(typed) === 0 ? "A TTL of 0 deletes the key now. Delete it?" : undefined}
        done="TTL set"
        run={async () => {
          await p.onSet(typed);
          setSecs("");
        }}
      >
        <label class="field" style={{ width: "8rem" }}>
          <span>TTL (seconds)</span>
          <input
            name="ttl"
            inputMode="numeric"
            value={secs}
            onInput={(e) => setSecs((e.target as HTMLInputElement).value)}
          />
        </label>
      </ActionForm>
      <Action label="Persist" disabled={p.ttl < 0} done="TTL removed" run={p.onPersist} />
    </div>
  );
}
