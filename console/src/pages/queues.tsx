import { useState } from "preact/hooks";
import { queue, queueSend } from "../api.js";
import { Action, PauseToggle, Badge, Field, fmtTime, Form, Page, Table, useLoad } from "../ui.js";

interface Queue {
  name: string;
  parallelism: number;
  lag: number;
  paused: boolean;
  createdAt: number;
}

/** FIFO queues: list with lag, create or change parallelism, pause, resume, delete. */
export function QueuesPage() {
  const list = useLoad(() => queue<Queue[]>("queues"), []);
  const [name, setName] = useState("");
  const [parallelism, setParallelism] = useState("1");
  const path = (q: Queue, verb = "") => `queues/${encodeURIComponent(q.name)}${verb}`;
  return (
    <Page title="Queues">
      <Form onSubmit={() => undefined} class="bar card">
        <Field label="Queue name" value={name} onInput={setName} name="queueName" />
        <Field
          label="Parallelism"
          value={parallelism}
          onInput={setParallelism}
          width="7rem"
          name="parallelism"
        />
        <Action
          label="Create / update"
          kind="primary"
          disabled={!name}
          done="Queue saved"
          run={() =>
            queueSend("POST", "queues", { queueName: name, parallelism: Number(parallelism) }).then(
              () => {
                setName("");
                list.reload();
              },
            )
          }
        />
      </Form>
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
