/**
 * The REST fuzzer's shared types: a case on the wire, and what the generators know of
 * the service (./rest_cases.ts, ./handoff_cases.ts and ./upload_cases.ts all build
 * cases; none imports another for its types).
 */

/** One raw HTTP/1.1 request, and the secrets it carries that no answer may echo. */
export interface RestCase {
  kind: "body" | "header" | "path" | "matrix" | "handoff" | "upload";
  /** Where it goes: the service (default) or, on a topology, the media node. */
  to?: "node";
  /** Body bytes sent before the sender stops writing (a stalled body); default all. */
  stall?: number;
  method: string;
  /** The request target, as sent (not normalised). */
  target: string;
  /** Header lines in order; values may hold any byte below 0x100. */
  headers: [string, string][];
  body: Uint8Array;
  secrets: string[];
  /** Whether the case sets its own Content-Length (else the sender adds the right one). */
  ownLength?: boolean;
}

/** The node under attack: its id changes when it restarts. */
export interface NodeTarget {
  id: string;
  secret: Uint8Array;
}

/** A signed-in console: its cookie, the forms' CSRF token, the origin to send. */
export interface ConsoleTarget {
  cookie: string;
  csrf: string;
  origin: string;
  tenant: string;
}

/** What the generators know of the service: credentials and a real session. */
export interface CaseContext {
  adminKey: string;
  tenantKey: string;
  sessionId: string;
  clientToken: string;
  /** On a topology: the media node's base URL and what a handoff to it is signed for. */
  node?: NodeTarget & { base: string };
  /** A signed-in console, for the photo upload cases (./upload_cases.ts). */
  console?: ConsoleTarget;
}
