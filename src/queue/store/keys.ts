/**
 * The queue's Redis key layout. Key names are built here and, inside the Lua scripts, only by
 * lua/includes/keys.lua, for the keys whose ids a script learns itself (a message id popped from
 * a wait list, a queue name read from a message hash) or whose number varies (the dedup keys of
 * a group-committed enqueue); every other key a script touches is passed in its KEYS. test/queue/lua-contracts.test.ts checks the include builds the same
 * names, and that scripts touch no other keys.
 *
 * Every key carries the `{stashd:q}` hash tag, so each script touches one cluster slot; scripts
 * receive the prefix (ARGV[1]) and keys.lua appends to it, which keeps those keys in the slot.
 *
 *   <p>msg:<id>    hash  meta (JSON MessageMeta), body (raw bytes), state, retried, lease, tmo
 *   <p>due         zset  message id -> due time (ms); ready when score <= now
 *   <p>active      zset  message id -> lease deadline (ms); past deadline = returned by the reaper
 *   <p>pending     zset  message id -> createdAt, every message not yet finished (for bulk cancel)
 *   <p>dlq         zset  dlq ids, all score 0: `<ms>-<seq>` ids sort by time lexicographically
 *   <p>dlq:<id>    hash  meta (JSON DlqMeta), body (raw bytes)
 *   <p>log         stream  one entry per state change: id, state, time, meta, extra
 *   <p>dedup:<k>   string  publish response of the first message with that dedup key, PX window
 *   <p>topic:<n>   string  JSON URL group; <p>topics set of group names
 *   <p>keys        hash  current, next signing keys
 *   <p>slot-probe  never exists: scripts touch it to find out whether their slot is migrating
 *                  (see lua/includes/keys.lua)
 *   <p>sched:<id>  hash  def (JSON ScheduleDef), body (raw bytes), next, last (ms), paused (0|1),
 *                        states (JSON {messageId: state} of the last fire), error (last fire)
 *   <p>schedules   set   every schedule id
 *   <p>sched-due   zset  schedule id -> next fire time (ms), unpaused schedules only
 *   <p>queue:<n>   hash  FIFO queue config: parallelism, paused (0|1), createdAt, updatedAt
 *   <p>queues      set   every queue name
 *   <p>qwait:<n>   list  ids of the queue's messages waiting for a slot, oldest first (not in due)
 *   <p>qslots:<n>  hash  slot id (the admitted message's id) -> holders (the message, then its
 *                        callbacks); HLEN = slots in use, never more than parallelism when admitted
 *   A queue message's hash also has `queue` (name) and `qdue` (its due time), and once admitted
 *   (moved from qwait into due) `slot`. The slot logic is in lua/includes/queue-*.lua.
 *   <p>fc:<k>      hash  flow-control key: parallelism, rate (0 = none), period (s), count (admitted,
 *                        unfinished), rstart (ms), rcount (admitted this period), createdAt,
 *                        paused, pinP, pinR (0|1: parallelism / rate+period pinned)
 *   <p>fckeys      set   every flow-control key
 *   <p>fcwait:<k>  list  ids of the key's messages waiting for admission, oldest first (not in due)
 *   <p>fcwake      zset  key -> start of its next rate period, while messages wait for the rate
 *   A flow-control message's hash also has `fc` (key), `fcdue` and once admitted `fcslot`. The
 *   logic is in lua/includes/fc-*.lua.
 *   Workflow runs (docs/workflow.md §3; transitions lua/workflow-*.lua):
 *   <p>wf:<R>      hash  state, createdAt, completedAt, url, initId (first message), config (JSON
 *                        RunConfig), body (initial payload), callerIp, response, dlqId, error,
 *                        invoker (JSON), failure (JSON failure-callback outcome), released:<id>
 *   <p>wfsteps:<R> list  step entries as JSON `{"messageId","body","callType"}`, in list order
 *   <p>wfmsgs:<R>  set   ids of the run's messages not known finished (cancelled at its end)
 *   <p>wfinfo:<R>  hash  message id -> JSON of what the logs show of it (createdAt, headers,
 *                        retries, retryDelay), written when it joins the run
 *   <p>wferr:<R>   list  JSON failed attempts `{"messageId","error","status","headers","body",
 *                        "time"}` of the run's messages, oldest first (logs)
 *   <p>wfruns      zset  run id -> createdAt (logs, bulk cancel)
 *   <p>wfwait:<E>  hash  run id -> waiter JSON of a wait for event E
 *   <p>wfnote:<R>  hash  event id -> JSON list of event data kept for run R's next wait
 *   An ended run's hash, step list, wfinfo and wferr expire after the log retention; a
 *   cancelled run's hash keeps the ids of the messages it cancelled as `canceled` (JSON list).
 */
export const QUEUE_PREFIX = "stashd:{stashd:q}:v1:";

export const queueKeys = {
  prefix: QUEUE_PREFIX,
  due: `${QUEUE_PREFIX}due`,
  active: `${QUEUE_PREFIX}active`,
  pending: `${QUEUE_PREFIX}pending`,
  dlq: `${QUEUE_PREFIX}dlq`,
  log: `${QUEUE_PREFIX}log`,
  topics: `${QUEUE_PREFIX}topics`,
  signingKeys: `${QUEUE_PREFIX}keys`,
  slotProbe: `${QUEUE_PREFIX}slot-probe`,
  message: (id: string): string => `${QUEUE_PREFIX}msg:${id}`,
  dlqEntry: (id: string): string => `${QUEUE_PREFIX}dlq:${id}`,
  dedup: (key: string): string => `${QUEUE_PREFIX}dedup:${key}`,
  topic: (name: string): string => `${QUEUE_PREFIX}topic:${name}`,
  schedules: `${QUEUE_PREFIX}schedules`,
  scheduleDue: `${QUEUE_PREFIX}sched-due`,
  schedule: (id: string): string => `${QUEUE_PREFIX}sched:${id}`,
  queues: `${QUEUE_PREFIX}queues`,
  queue: (name: string): string => `${QUEUE_PREFIX}queue:${name}`,
  queueWait: (name: string): string => `${QUEUE_PREFIX}qwait:${name}`,
  queueSlots: (name: string): string => `${QUEUE_PREFIX}qslots:${name}`,
  flowControlKeys: `${QUEUE_PREFIX}fckeys`,
  flowControl: (key: string): string => `${QUEUE_PREFIX}fc:${key}`,
  flowControlWait: (key: string): string => `${QUEUE_PREFIX}fcwait:${key}`,
  flowControlWake: `${QUEUE_PREFIX}fcwake`,
  workflowRun: (id: string): string => `${QUEUE_PREFIX}wf:${id}`,
  workflowSteps: (id: string): string => `${QUEUE_PREFIX}wfsteps:${id}`,
  workflowMessages: (id: string): string => `${QUEUE_PREFIX}wfmsgs:${id}`,
  workflowStepInfo: (id: string): string => `${QUEUE_PREFIX}wfinfo:${id}`,
  workflowErrors: (id: string): string => `${QUEUE_PREFIX}wferr:${id}`,
  workflowRuns: `${QUEUE_PREFIX}wfruns`,
  workflowWaiters: (eventId: string): string => `${QUEUE_PREFIX}wfwait:${eventId}`,
  workflowNotes: (runId: string): string => `${QUEUE_PREFIX}wfnote:${runId}`,
} as const;
