import { useState } from "preact/hooks";
import { queue, queueSend } from "../api.js";
import {
  Action,
  ActionForm,
  PauseToggle,
  Badge,
  Field,
  fmtTime,
  Page,
  Table,
  useLoad,
} from "../ui.js";

interface Queue {
  name: string;
  parallelism: number;
  lag: number;
  paused: boolean;
  createdAt: number;
}

/** A queue's parallelism as typed: a whole number of 1 or more, else an error saying so. */
export function parseParallelism(text: string): number {
  const t = text.trim();
  const n = Number(t);
  if (!/^\d+$/.test(t) || !Number.isSafeInteger(n) || n < 1) {
    throw new Error(`parallelism must be a whole number of 1 or more, not "${text}"`);
  }
  return n;
}

/** FIFO queues: list with lag, create or change parallelism, pause, resume, delete. */
export function QueuesPage() {
  const list = useLoad(() => queue<Queue[]>("queues"), []);
  const [name, setName] = useState("");
  const [parallelism, setParallelism] = useState("1");
  const path = (q: Queue, verb = "") => `queues/${encodeURIComponent(q.name)}${verb}`;
  return (
    <Page title="Queues">
      <ActionForm
        label="Create / update"
        disabled={!name}
        done="Queue saved"
        run={async () => {
          await queueSend("POST", "queues", {
            queueName: name,
            parallelism: parseParallelism(parallelism),
          });
          setName("");
          list.reload();
        }}
      >
        <Field label="Queue name" value={name} onInput={setName} name="queueName" />
        <Field
          label="Parallelism"
          value={parallelism}
          onInput={setParallelism}
          width="7rem"
          name="parallelism"
        />
      </ActionForm>
      <Table
        error={list.error}
        label="queues"
        rows={list.data ?? []}
        rowKey={(q) => q.name}
        empty={list.loading ? "Loading…" : "No queues yet."}
        columns={[
          { title: "Name", render: (q) => <code>{q.name}</code> },
          { title: "Parallelism", render: (q) => String(q.parallelism) },
          { title: "Lag", render: (q) => q.lag.toLocaleString("en-US") },
          { title: "State", render: (q) => <Badge text={q.paused ? "PAUSED" : "ACTIVE"} /> },
          { title: "Created", render: (q) => fmtTime(q.createdAt), class: "nowrap" },
          {
            title: "",
            class: "nowrap",
            render: (q) => (
              <>
                <PauseToggle
                  paused={q.paused}
                  run={(verb) => queueSend("POST", path(q, `/${verb}`)).then(list.reload)}
                />
                <Action
                  label="Delete"
                  kind="danger"
                  confirm={`Delete queue ${q.name}? Its waiting messages are cancelled.`}
                  done="Deleted"
                  run={() => queueSend("DELETE", path(q)).then(list.reload)}
                />
              </>
            ),
          },
        ]}
      />
    </Page>
  );
}
