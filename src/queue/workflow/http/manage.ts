import { AppError } from "../../../shared/errors.js";
import type { Handler } from "../../routes/context.js";
import { countParam, reply } from "../../routes/util.js";
import { endRun } from "../engine/lifecycle.js";
import { isEmptyRunFilter, matchesRun, runFilterFromQuery, scanRuns } from "./scan.js";

/**
 * DELETE /v2/workflows/runs (docs/workflow.md §12): cancels the runs named by `workflowRunIds`,
 * or up to `count` (default 100) active runs matching the filters; only `count` (the SDK's
 * `{all: true}`) means every active run. Nothing at all is a 400. Answers `{cancelled}`, the
 * runs actually moved from active to canceled.
 */
export const cancelRuns: Handler = async (ctx, r) => {
  const filter = runFilterFromQuery(r.query, ["count", "cursor"]);
  if (isEmptyRunFilter(filter) && !r.query.has("count")) {
    throw new AppError("bad_request", "name workflowRunIds, a filter, or count for all runs");
  }
  let ids = filter.runIds;
  if (ids.length === 0 || !isEmptyRunFilter({ ...filter, runIds: [] })) {
    const keep = (run: Parameters<typeof matchesRun>[1]) =>
      run.state === "RUN_STARTED" && matchesRun(filter, run);
    const page = await scanRuns(ctx, keep, countParam(r.query, 100, 1000), null);
    ids = page.runs.map((run) => run.runId);
  }
  let cancelled = 0;
  for (const id of ids) if (await endRun(ctx, id, "RUN_CANCELED")) cancelled++;
  reply(r.res, 200, { cancelled });
};
