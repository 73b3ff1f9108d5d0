import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";

/** Files of a private CA and a server certificate it signed, for TLS tests. */
export interface TestCerts {
  ca: string;
  cert: string;
  key: string;
}

/**
 * Makes, in `dir`, a CA and a server certificate valid for `localhost` and 127.0.0.1 (cluster
 * nodes announce themselves by IP). Clients trust the CA through NODE_EXTRA_CA_CERTS, as a user
 * would for a private CA.
 */
export function makeTestCerts(dir: string): TestCerts {
  const ssl = (...args: string[]): void =>
    void execFileSync("openssl", args, { cwd: dir, stdio: "ignore" });
  const days = ["-days", "2"];
  const newKey = ["-newkey", "rsa:2048", "-nodes"];
  ssl(
    "req",
    "-x509",
    ...newKey,
    ...days,
    "-subj",
    "/CN=stashd test CA",
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
  );
  ssl("req", ...newKey, "-subj", "/CN=localhost", "-keyout", "server.key", "-out", "server.csr");
  writeFileSync(path.join(dir, "san.ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
  ssl(
    ...["x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key"],
    ...["-CAcreateserial", ...days, "-extfile", "san.ext", "-out", "server.crt"],
  );
  return {
    ca: path.join(dir, "ca.crt"),
    cert: path.join(dir, "server.crt"),
    key: path.join(dir, "server.key"),
  };
}
