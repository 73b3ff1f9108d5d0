import { useEffect, useState } from "preact/hooks";
import { get, kvWrite, query } from "../api.js";
import { Action, ErrorLine, Facts, fmtTtl, messageOf, Panel } from "../ui.js";
import { ValueEditor } from "./kv-values.js";

/** GET /console/api/kv/<db>/key: one page of a key's value (see src/admin/console/kv-browse.ts). */
export interface KeyView {
  key: string;
  type: string;
  ttl: number;
  length: number;
  cursor: string;
  value: unknown;
}

/** The selected key: facts, TTL, delete, and the value editor of its type (members paged). */
export function KeyDetail(p: {
  db: string;
  name: string;
  onClose: () => void;
  onDeleted: () => void;
}) {
  const [view, setView] = useState<KeyView | undefined>();
  const [error, setError] = useState<string | undefined>();
  const base = `kv/${encodeURIComponent(p.db)}/key`;
  const load = async (cursor = "0", append = false) => {
    try {
      const next = await get<KeyView>(`${base}${query({ key: p.name, cursor })}`);
      setView((old) =>
        append && old ? { ...next, value: mergePages(old.value, next.value) } : next,
      );
      setError(undefined);
    } catch (err) {
      setError(messageOf(err));
    }
  };
  useEffect(() => void load(), [p.db, p.name]);
  const write = async (...commands: string[][]) => {
    await kvWrite(p.db, ...commands);
    await load();
  };
  const more = view && view.cursor !== "" && view.cursor !== "0";
  return (
    <Panel title={p.name} onClose={p.onClose}>
      <ErrorLine error={error} />
      {view && (
        <>
          <Facts
            items={[
              ["Type", view.type],
              [
                "Size",
                `${view.length.toLocaleString("en-US")} ${view.type === "string" ? "bytes" : "entries"}`,
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
          <ValueEditor view={view} write={write} />
          {more && (
            <button type="button" class="btn plain" onClick={() => void load(view.cursor, true)}>
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

function TtlEditor(p: {
  ttl: number;
  onSet: (s: string) => Promise<void>;
  onPersist: () => Promise<void>;
}) {
  const [secs, setSecs] = useState("");
  return (
    <div class="bar">
      <label class="field" style={{ width: "8rem" }}>
        <span>TTL (seconds)</span>
        <input
          name="ttl"
          inputMode="numeric"
          value={secs}
          onInput={(e) => setSecs((e.target as HTMLInputElement).value)}
        />
      </label>
      <Action
        label="Set TTL"
        disabled={!/^\d+$/.test(secs)}
        done="TTL set"
        run={async () => {
          await p.onSet(secs);
          setSecs("");
        }}
      />
      <Action label="Persist" disabled={p.ttl < 0} done="TTL removed" run={p.onPersist} />
    </div>
  );
}
