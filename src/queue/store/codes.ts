/**
 * The status codes queue scripts return, one number per meaning. The Lua side has the same table
 * in lua/includes/codes.lua (test/queue/lua-contracts.test.ts compares them). A script that
 * returns a count (messages admitted, cancelled) returns it as is, >= 0; refusals are negative.
 */
export const ScriptCode = {
  /** Nothing changed: the entry or schedule does not exist, or another process advanced it. */
  unchanged: 0,
  /** Stored, done, changed or deleted. */
  ok: 1,
  /** finish: the message was cancelled while in flight and finished as CANCELED. */
  canceled: 2,
  /** enqueue, queueEnqueue: the dedup key was taken; the first publish's response follows. */
  duplicate: 3,
  /** finish: the lease was lost (the reaper returned the message; the result is dropped). */
  leaseLost: -1,
  /** queueConfig: the queue does not exist and is not to be created. */
  queueMissing: -2,
  /** queueEnqueue, queueConfig: creating the queue would exceed the max number of queues. */
  tooManyQueues: -3,
  /** flowControlManage: the flow-control key does not exist. */
  flowControlKeyMissing: -4,
  /** topicUpdate: the URL group does not exist (remove, headers). */
  urlGroupMissing: -5,
  /** scheduleSave: creating the schedule would exceed the max number of schedules. */
  tooManySchedules: -6,
  /** workflow*: the run is unknown or has ended. */
  runNotActive: -7,
  /** workflowAppend, workflowStart: the run's step list would exceed its maximum. */
  tooManySteps: -8,
  /** workflowKeep: too many notifications are kept for the run's next wait. */
  tooManyKept: -9,
  /** topicUpdate: adding the endpoints would exceed the max endpoints of a URL group. */
  tooManyEndpoints: -10,
  /** enqueue: the publish would create a flow-control key past the max number of keys. */
  tooManyFlowControlKeys: -11,
  /** workflowWait: a kept notification was taken (its data follows); workflowKeep: kept. */
  eventKept: 4,
  /** workflowKeep: the run waits for the event (the waiter JSON follows). */
  waiting: 5,
} as const;

export type ScriptCode = (typeof ScriptCode)[keyof typeof ScriptCode];
