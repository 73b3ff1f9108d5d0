import { useState } from "preact/hooks";
import { queue, queueSend } from "../api.js";
import { Action, ErrorLine, Facts, Page, useLoad } from "../ui.js";

interface Keys {
  current: string;
  next: string;
}

function mask(key: string): string {
  return key.length <= 8 ? "••••" : `${key.slice(0, 4)}••••••••${key.slice(-4)}`;
}

/** Signing keys: current and next (hidden until shown), and rotation (next becomes current). */
export function SigningKeysPage() {
  const keys = useLoad(() => queue<Keys>("keys"), []);
  const [shown, setShown] = useState(false);
  const k = keys.data;
  return (
    <Page
      title="Signing keys"
      actions={
        <>
          <button type="button" class="btn plain" onClick={() => setShown(!shown)}>
            {shown ? "Hide" : "Show"}
          </button>
          <Action
            label="Rotate"
            kind="danger"
            confirm="Rotate the signing keys? The next key becomes current and a new next key is made. Receivers must know the new next key."
            done="Keys rotated"
            run={() => queueSend("POST", "keys/rotate").then(keys.reload)}
          />
        </>
      }
    >
      <ErrorLine error={keys.error} />
      {k && (
        <Facts
          items={[
            ["Current", <code data-key="current">{shown ? k.current : mask(k.current)}</code>],
            ["Next", <code data-key="next">{shown ? k.next : mask(k.next)}</code>],
          ]}
        />
      )}
      <p class="hint">
        Deliveries are signed with the current key; receivers verify with either key, so rotating
        never breaks a receiver that knows both (see docs/queue.md).
      </p>
    </Page>
  );
}
