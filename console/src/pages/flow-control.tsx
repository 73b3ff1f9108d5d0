import { useState } from "preact/hooks";
import { query, queue, queueSend } from "../api.js";
import {
  Action,
  PauseToggle,
  Badge,
  Field,
  fmtInteger,
  Form,
  Id,
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

/** A rate period in seconds as people say it: "1 s", "60 s", "1 h", "1 day". */
function fmtPeriod(seconds: number): string {
  if (seconds % 86_400 === 0) return seconds === 86_400 ? "day" : `${seconds / 86_400} days`;
  if (seconds % 3600 === 0) return seconds === 3600 ? "hour" : `${seconds / 3600} h`;
  if (seconds % 60 === 0 && seconds >= 120) return `${seconds / 60} min`;
  return seconds === 1 ? "second" : `${seconds} s`;
}

/**
 * Flow-control keys: live usage against their limits, each figure saying what it counts
 * (messages waiting, deliveries in flight of the parallelism limit, deliveries started in the
 * rate's period of its limit); pause, resume, reset the rate.
 */
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
        stack
        rows={list.data ?? []}
        rowKey={(k) => k.flowControlKey}
        empty={
          list.loading ? "Loading…" : "No flow-control keys: they appear when a message uses one."
        }
        columns={[
          {
            title: "Key",
            render: (k) => <Id value={k.flowControlKey} what="flow-control key" />,
          },
          {
            title: "Waiting messages",
            render: (k) => (
              <span class="fig" data-fig="waiting">
                <b>{fmtInteger(k.waitListSize)}</b> waiting
              </span>
            ),
          },
          {
            title: "Parallelism (in use / limit)",
            render: (k) => (
              <span class="fig" data-fig="parallelism">
                <b>{fmtInteger(k.parallelismCount)}</b> in use /{" "}
                {k.parallelismMax ? (
                  <>
                    <b>{fmtInteger(k.parallelismMax)}</b> limit
                  </>
                ) : (
                  "no limit"
                )}
              </span>
            ),
          },
          {
            title: "Rate (started / limit per period)",
            render: (k) => (
              <span class="fig" data-fig="rate">
                {k.rateMax ? (
                  <>
                    <b>{fmtInteger(k.rateCount)}</b> started / <b>{fmtInteger(k.rateMax)}</b> limit
                    per {fmtPeriod(k.ratePeriod)}
                  </>
                ) : (
                  "no rate limit"
                )}
              </span>
            ),
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
