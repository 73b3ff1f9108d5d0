/**
 * An error a SEARCH.* command answers as a Redis error reply (`{"error": message}` over REST):
 * bad input, a missing index, a limit reached. Thrown anywhere below the command handlers and
 * turned into the reply there (commands.ts); any other exception is a bug and propagates.
 */
export class SearchError extends Error {}
