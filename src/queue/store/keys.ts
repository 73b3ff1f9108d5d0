/**
 * The queue's Redis key layout. Key names are built here and, inside the Lua scripts, only by
 * lua/includes/keys.lua, for the keys whose ids a script learns itself (a message id popped from
 * a wait list, a queue name read from a message hash) or whose number varies (the dedup keys of
 * a group-committed enqueue); every other key a script touches is passed in its KEYS. test/queue/lua-contracts.test.ts checks the include builds the same
 * names, and that scripts touch no other keys.
 *
 * The queue is split into partitions (docs/scaling.md, Queue partitions): the same layout under
 * one prefix per partition, `stashd:{<tag>}:v1:`, whose hash tag puts all of a partition's keys
 * in one cluster slot (partition 0's tag is `stashd:q`, the only prefix before partitions
 * existed). A script touches one partition: it receives the prefix (ARGV[1]) and keys.lua
 * appends to it, which keeps those keys in the slot. `<p>` below is the prefix.
 *
 *   <p>msg:<id>    hash  meta (JSON MessageMeta), body (raw bytes), state, retried, lease, tmo
 *   <p>due         zset  message id -> due time (ms); ready when score <= now
 *   <p>due-routes  hash  message id -> route (origin and FIFO queue) of due messages a claim
 *                        skipped: a cache that lets claims read a range's routes at once
 *                        (lua/claim.lua; expires a minute after it was created, then rebuilt)
 *   <p>parked      hash  origin -> number of due messages set apart in its parked:<origin>
 *   <p>parked:<o>  zset  message id -> due time (ms) of origin <o>'s due messages that a claim set
 *                        apart while <o> held its share, so claims see past them; moved back
 *                        as slots for <o> free (lua/includes/parking.lua)
 *   <p>active      zset  message id -> lease deadline (ms); past deadline = returned by the reaper
 *   <p>pending     zset  message id -> createdAt, every message not yet finished (for bulk cancel)
 *   <p>dlq         zset  dlq ids, all score 0: `<ms>-<seq>` ids sort by time lexicographically
 *   <p>dlq:<id>    hash  meta (JSON DlqMeta), body (raw bytes)
 *   <p>dlq-wf      zset  the dlq ids of workflow runs' entries (a subset of dlq, score 0), so the
 *                        message DLQ's size is ZCARD dlq - ZCARD dlq-wf without reading entries;
 *                        kept by the same scripts that add and remove dlq ids
 *   <p>log         stream  one entry per state change: id, state, time, meta, extra
 *   <p>msglog:<id> list  the log stream ids of message <id>'s events, oldest first (the index the
 *                        reads by message id use); pushed by lua/includes/add-log.lua with each
 *                        event, expiring one log retention after the message's last event
 *   <p>dedup:<k>   string  publish response of the first message with that dedup key, PX window
 *   <p>topic:<n>   string  JSON URL group; <p>topics set of group names
 *   <p>keys        hash  current, next signing keys
 *   <p>partitions  string  the partition count the queue was created with (partition 0 only)
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
 *   <p>qdrain:<id> list  a deleted queue's wait list, cancelled a step at a time (queue-drain.lua)
 *   <p>qdrains     set   the qdrain lists not yet empty (drained again at start after a crash)
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
/** Partition 0's hash tag: the tag of every queue key before partitions existed. */
export const MAIN_TAG = "stashd:q";

/** The key prefix of the partition whose keys carry hash tag `tag`. */
export const prefixOf = (tag: string): string => `stashd:{${tag}}:v1:`;

/** Partition 0's prefix (a single-partition queue's only one). */
export const QUEUE_PREFIX = prefixOf(MAIN_TAG);

export type QueueKeys = ReturnType<typeof queueKeysFor>;

/** The key names of the partition with `prefix` (see the layout above). */
export function queueKeysFor(prefix: string) {
  return {
    prefix,
    due: `${prefix}due`,
    dueRoutes: `${prefix}due-routes`,
    parked: `${prefix}parked`,
    parkedDue: (origin: string): string => `${prefix}parked:${origin}`,
    active: `${prefix}active`,
    pending: `${prefix}pending`,
    dlq: `${prefix}dlq`,
    dlqWorkflow: `${prefix}dlq-wf`,
    log: `${prefix}log`,
    topics: `${prefix}topics`,
    signingKeys: `${prefix}keys`,
    slotProbe: `${prefix}slot-probe`,
    partitionCount: `${prefix}partitions`,
    message: (id: string): string => `${prefix}msg:${id}`,
    messageLog: (id: string): string => `${prefix}msglog:${id}`,
    dlqEntry: (id: string): string => `${prefix}dlq:${id}`,
    dedup: (key: string): string => `${prefix}dedup:${key}`,
    topic: (name: string): string => `${prefix}topic:${name}`,
    schedules: `${prefix}schedules`,
    scheduleDue: `${prefix}sched-due`,
    schedule: (id: string): string => `${prefix}sched:${id}`,
    queues: `${prefix}queues`,
    queue: (name: string): string => `${prefix}queue:${name}`,
    queueWait: (name: string): string => `${prefix}qwait:${name}`,
    queueSlots: (name: string): string => `${prefix}qslots:${name}`,
    queueDrain: (id: string): string => `${prefix}qdrain:${id}`,
    queueDrains: `${prefix}qdrains`,
    flowControlKeys: `${prefix}fckeys`,
    flowControl: (key: string): string => `${prefix}fc:${key}`,
    flowControlWait: (key: string): string => `${prefix}fcwait:${key}`,
    flowControlWake: `${prefix}fcwake`,
    workflowRun: (id: string): string => `${prefix}wf:${id}`,
    workflowSteps: (id: string): string => `${prefix}wfsteps:${id}`,
    workflowMessages: (id: string): string => `${prefix}wfmsgs:${id}`,
    workflowStepInfo: (id: string): string => `${prefix}wfinfo:${id}`,
    workflowErrors: (id: string): string => `${prefix}wferr:${id}`,
    workflowRuns: `${prefix}wfruns`,
    workflowWaiters: (eventId: string): string => `${prefix}wfwait:${eventId}`,
    workflowNotes: (runId: string): string => `${prefix}wfnote:${runId}`,
  } as const;
}

/** Partition 0's keys. */
export const queueKeys = queueKeysFor(QUEUE_PREFIX);
