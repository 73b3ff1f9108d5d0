import { useState } from "preact/hooks";
import { query, queue, queueSend } from "../api.js";
import {
  Action,
  PauseToggle,
  Badge,
  Field,
  fmtInteger,
  Form,
  Page,
  Table,
  useInterval,
  useLoad,
} from "../ui.js";

interface FlowKey {
  flowControlKey: string;
  waitListSize: number;
  parallelismMax: number;
  parallelismCount: number;
  rateMax: number;
  rateCount: number;
  ratePeriod: number;
  isPaused: boolean;
}

/** Flow-control keys: live usage against their limits; pause, resume, reset the rate. */
export function FlowControlPage() {
  const [search, setSearch] = useState("");
  const [applied, setApplied] = useState("");
  const list = useLoad(
    () => queue<FlowKey[]>(`flowControl${query({ search: applied })}`),
    [applied],
  );
  useInterval(list.reload, 3000);
  const act = (k: FlowKey, verb: string) =>
    queueSend("POST", `flowControl/${encodeURIComponent(k.flowControlKey)}/${verb}`).then(
      list.reload,
    );
  return (
    <Page title="Flow control">
      <Form onSubmit={() => setApplied(search)}>
        <Field label="Key contains" value={search} onInput={setSearch} name="search" />
        <button type="submit" class="btn primary">
          Search
        </button>
      </Form>
      <Table
        error={list.error}
        label="flow control keys"
        rows={list.data ?? []}
        rowKey={(k) => k.flowControlKey}
        empty={
          list.loading ? "Loading…" : "No flow-control keys: they appear when a message uses one."
        }
        columns={[
          { title: "Key", render: (k) => <code>{k.flowControlKey}</code> },
          { title: "Waiting", render: (k) => fmtInteger(k.waitListSize) },
          {
            title: "Parallelism",
            render: (k) => `${k.parallelismCount} / ${k.parallelismMax || "∞"}`,
          },
          {
            title: "Rate",
            render: (k) => (k.rateMax ? `${k.rateCount} / ${k.rateMax} per ${k.ratePeriod}s` : "—"),
          },
          { title: "State", render: (k) => <Badge text={k.isPaused ? "PAUSED" : "ACTIVE"} /> },
          {
            title: "",
            class: "nowrap",
            render: (k) => (
              <>
                <PauseToggle paused={k.isPaused} run={(verb) => act(k, verb)} />
                <Action label="Reset rate" done="Rate reset" run={() => act(k, "resetRate")} />
              </>
            ),
          },
        ]}
      />
    </Page>
  );
}
