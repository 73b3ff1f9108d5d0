import { useState } from "preact/hooks";
import { queue, queueSend } from "../api.js";
import { href, navigate } from "../routes.js";
import {
  Action,
  ActionForm,
  PauseToggle,
  Badge,
  Field,
  fmtInteger,
  fmtTime,
  Facts,
  Page,
  Panel,
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

/**
 * FIFO queues: list with lag, create or change parallelism, pause, resume, delete;
 * `#/queues/<name>` opens one.
 */
export function QueuesPage(p: { name: string | undefined }) {
  const list = useLoad(() => queue<Queue[]>("queues"), []);
  const open = list.data?.find((q) => q.name === p.name);
  const [name, setName] = useState("");
  const [parallelism, setParallelism] = useState("1");
  const path = (q: Queue, verb = "") => `queues/${encodeURIComponent(q.name)}${verb}`;
  return (
    <Page
      title="Queues"
      side={p.name !== undefined && <QueuePanel name={p.name} q={open} loading={list.loading} />}
    >
      <ActionForm
        label="Create / update"
        disabled={name.trim() === ""}
        done="Queue saved"
        run={async () => {
          await queueSend("POST", "queues", {
            queueName: name.trim(),
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
        selected={p.name}
        onRow={(q) => navigate(href.queue(q.name))}
        empty={list.loading ? "Loading…" : "No queues yet."}
        columns={[
          { title: "Name", render: (q) => <code>{q.name}</code> },
          { title: "Parallelism", render: (q) => String(q.parallelism) },
          { title: "Lag", render: (q) => fmtInteger(q.lag) },
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

/** One queue's facts and links to its messages. */
function QueuePanel(p: { name: string; q: Queue | undefined; loading: boolean }) {
  const { q } = p;
  return (
    <Panel title={`Queue ${p.name}`} onClose={() => navigate(href.list("queues"))}>
      {q ? (
        <>
          <Facts
            items={[
              ["Parallelism", String(q.parallelism)],
              ["Lag (waiting)", fmtInteger(q.lag)],
              ["State", <Badge text={q.paused ? "PAUSED" : "ACTIVE"} />],
              ["Created", fmtTime(q.createdAt)],
            ]}
          />
          <p>
            <a href={href.list("messages", { queueName: q.name })}>Its messages</a>
            {" · "}
            <a href={href.list("dlq", { queueName: q.name })}>Its DLQ entries</a>
          </p>
        </>
      ) : (
        <p class="hint">{p.loading ? "Loading…" : `No queue ${p.name}.`}</p>
      )}
    </Panel>
  );
}
