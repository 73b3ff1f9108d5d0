import { command, useGateway } from "./helpers.js";

/**
 * Helpers for the JSON group's raw-HTTP tests (json-*.test.ts): a gateway in front of a Redis
 * without the JSON module, `run` sending one command with the standard token, and reply shapes.
 */
export function useJsonGateway(): {
  stashd: ReturnType<typeof useGateway>["stashd"];
  run: (...argv: unknown[]) => Promise<unknown>;
} {
  const { stashd } = useGateway();
  const run = async (...argv: unknown[]): Promise<unknown> => (await command(stashd(), argv)).body;
  return { stashd, run };
}

export const ok = (result: unknown): { result: unknown } => ({ result });
export const err = (error: string): { error: string } => ({ error });
