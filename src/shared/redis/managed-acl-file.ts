import { createHash } from "node:crypto";
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";

/**
 * The ACL file of a managed redis-server that keeps its ACL users across restarts (`ACL SAVE`
 * writes it; Redis loads it at start).
 *
 * Contract: a loaded ACL file replaces the `default` user wholesale, `requirepass` included: a
 * file without a `default` line would start the server with a password-less default user. So
 * before every start the file's `default` line is written anew from the server's password file,
 * with the rights stashd's own connection needs; every other line is kept as Redis saved it.
 */
export const ACL_FILE_NAME = "users.acl";

export function prepareAclFile(dir: string, password: string): string {
  const file = path.join(dir, ACL_FILE_NAME);
  const saved = existsSync(file) ? readFileSync(file, "utf8").split("\n") : [];
  const others = saved.filter((line) => line.trim() !== "" && !/^user\s+default\s/.test(line));
  const hash = createHash("sha256").update(password).digest("hex");
  const text = [`user default on #${hash} ~* &* +@all`, ...others, ""].join("\n");
  const temp = `${file}.tmp`;
  writeFileSync(temp, text, { mode: 0o600 });
  renameSync(temp, file);
  return file;
}
