import { useState } from "preact/hooks";
import { request } from "./api.js";
import { messageOf } from "./ui.js";

/** Login with the queue token (QSTASH_TOKEN) or STASHD_CONSOLE_TOKEN; the server sets the cookie. */
export function Login(p: { onDone: () => void }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      // A pasted token often brings a space or a line break along: tokens never contain them.
      await request("POST", "login", { token: token.trim() });
      setToken("");
      p.onDone();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="login">
      <form class="login-card" onSubmit={submit}>
        <div class="brand">stashd</div>
        <h1>Console</h1>
        <p class="hint">
          Log in with the queue token (<code>stashd credentials</code> prints it) or the console
          token.
        </p>
        <label class="field">
          <span>Token</span>
          <input
            name="token"
            type="password"
            autocomplete="current-password"
            value={token}
            onInput={(e) => setToken((e.target as HTMLInputElement).value)}
            autofocus
          />
        </label>
        {error && <p class="error-line">{error}</p>}
        <button type="submit" class="btn primary" disabled={busy || token.trim() === ""}>
          {busy ? "…" : "Log in"}
        </button>
      </form>
    </div>
  );
}
