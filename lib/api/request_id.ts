/** `X-Request-Id` handling (SPEC 7.4): a valid client value is kept, anything else replaced. */

const CLIENT_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** The request id for a request: the client's value when valid, else a fresh UUID. */
export function requestIdFrom(header: string | null): string {
  return header !== null && CLIENT_ID.test(header)
    ? header
    : crypto.randomUUID();
}
