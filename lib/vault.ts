/**
 * The credential vault (SPEC 1): per-session provider credentials, in this process's
 * memory only, for the session's lifetime. Each entry is the credentials' JSON encoded
 * as bytes, overwritten with zeros when the session turns terminal and on app close.
 * Callers get a short-lived decoded copy from `use()` and should not keep it.
 */
import type { ProviderCredentials } from "./ports/providers.ts";

export class CredentialVault {
  #entries = new Map<string, Uint8Array>();

  /** Stores `creds` for `sessionId`, zeroing any previous entry. */
  put(sessionId: string, creds: ProviderCredentials): void {
    this.zero(sessionId);
    this.#entries.set(
      sessionId,
      new TextEncoder().encode(JSON.stringify(creds)),
    );
  }

  /** A decoded copy of the credentials of `sessionId`, or null when none are held. */
  use(sessionId: string): ProviderCredentials | null {
    const bytes = this.#entries.get(sessionId);
    if (!bytes) return null;
    return JSON.parse(new TextDecoder().decode(bytes)) as ProviderCredentials;
  }

  /** Whether credentials are held for `sessionId`. */
  has(sessionId: string): boolean {
    return this.#entries.has(sessionId);
  }

  /** Overwrites the credentials of `sessionId` with zeros and forgets them. */
  zero(sessionId: string): void {
    const bytes = this.#entries.get(sessionId);
    if (!bytes) return;
    bytes.fill(0);
    this.#entries.delete(sessionId);
  }

  /** Zeroes every entry (app close). */
  zeroAll(): void {
    for (const id of [...this.#entries.keys()]) this.zero(id);
  }

  /** Number of sessions whose credentials are held. */
  /** The sessions whose credentials are held. */
  ids(): string[] {
    return [...this.#entries.keys()];
  }

  get size(): number {
    return this.#entries.size;
  }
}
