/**
 * An error a SEARCH.* command answers as a Redis error reply (`{"error": message}` over REST):
 * bad input, a missing index, a limit reached. Thrown anywhere below the command handlers and
 * turned into the reply there (commands.ts); any other exception is a bug and propagates.
 */
export class SearchError extends Error {}

/** A query's page of documents past the gateway's reply bound (STASHD_KV_MAX_REPLY_BYTES). */
export function pageTooLarge(maxBytes: number): SearchError {
  return new SearchError(
    `ERR reply too large: this page of documents exceeds the max reply size of ${maxBytes} bytes (STASHD_KV_MAX_REPLY_BYTES); ask for a smaller LIMIT or SELECT fewer fields`,
  );
}
