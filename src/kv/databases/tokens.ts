import { createCipheriv, createDecipheriv, createHmac, randomBytes } from "node:crypto";

/**
 * Token derivation for KV databases. Standard and read-only tokens are HMACs of the database
 * password, so resetting the password revokes both. `ACL RESTTOKEN` tokens carry the Redis ACL
 * user's name and password, encrypted (AES-256-GCM) under a key derived from the same database
 * password: they need no storage, work in every stashd process, and die with a password reset.
 */
export type TokenRole = "standard" | "readonly";

export function deriveToken(password: string, dbName: string, role: TokenRole): string {
  return createHmac("sha256", password).update(`stashd:${role}:${dbName}`).digest("base64url");
}

const ACL_PREFIX = "acl_";

function aclKey(password: string): Buffer {
  return createHmac("sha256", password).update("stashd:acl-token-key").digest();
}

export interface AclCredentials {
  username: string;
  password: string;
}

export function mintAclToken(dbPassword: string, creds: AclCredentials): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", aclKey(dbPassword), iv);
  const plain = Buffer.from(JSON.stringify([creds.username, creds.password]));
  const sealed = Buffer.concat([cipher.update(plain), cipher.final()]);
  return ACL_PREFIX + Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString("base64url");
}

/** The credentials inside an ACL token, or undefined if it was not minted with this password. */
export function openAclToken(dbPassword: string, token: string): AclCredentials | undefined {
  if (!token.startsWith(ACL_PREFIX)) return undefined;
  const raw = Buffer.from(token.slice(ACL_PREFIX.length), "base64url");
  if (raw.length < 12 + 16 + 2) return undefined;
  try {
    const decipher = createDecipheriv("aes-256-gcm", aclKey(dbPassword), raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(raw.length - 16));
    const plain = Buffer.concat([
      decipher.update(raw.subarray(12, raw.length - 16)),
      decipher.final(),
    ]);
    const parsed: unknown = JSON.parse(plain.toString("utf8"));
    if (!Array.isArray(parsed) || typeof parsed[0] !== "string" || typeof parsed[1] !== "string") {
      return undefined;
    }
    return { username: parsed[0], password: parsed[1] };
  } catch {
    return undefined;
  }
}

export function isAclToken(token: string): boolean {
  return token.startsWith(ACL_PREFIX);
}

/** Password of the `default_ro` ACL user, derived from the backend's own credentials. */
export function readonlyUserPassword(backendSecret: string): string {
  return createHmac("sha256", backendSecret).update("stashd:default_ro").digest("hex");
}

/** Password of the standard token's ACL user (command-rights.ts), derived likewise. */
export function standardUserPassword(backendSecret: string): string {
  return createHmac("sha256", backendSecret).update("stashd:stashd_standard").digest("hex");
}
