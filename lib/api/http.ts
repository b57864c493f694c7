/**
 * The small HTTP layer the app is built on, in Fresh's shape: route modules export
 * `handler` (a method → function table) and optionally a default page component;
 * `_middleware.ts` modules wrap every route below their folder. Here: the per-request
 * context and state, the middleware chain, JSON answers and response headers; the
 * manifest's routes are matched by ./router.ts.
 */
import type { PresentedKey } from "../principal.ts";
import type { AppDeps } from "../deps.ts";
import type { Principal } from "../principal.ts";
import type { RateLimiter } from "./rate_limit.ts";
import { ApiError } from "../errors.ts";

export type Method =
  | "GET"
  | "POST"
  | "PUT"
  | "PATCH"
  | "DELETE"
  | "HEAD"
  | "OPTIONS";

/** Per-request state passed through the middleware chain, like Fresh's `ctx.state`. */
export interface RequestState {
  requestId: string;
  startedAt: number;
  /** Route template (the manifest path), for the access log. */
  route?: string;
  principal?: Principal;
  /** The request's credential, read once (`requestCredential` in lib/auth/authenticate.ts). */
  credential?: RequestCredential;
  /** The rate limiter counting this request (set by the `/v1/` middleware). */
  rateLimiter?: RateLimiter;
  /** Whether the request was counted against a window (lib/api/rate_limit.ts). */
  rateCharged?: boolean;
  /** Whether `authenticate` tried the credential (it may have failed). */
  authTried?: boolean;
  /** Extra headers every response of this request carries (e.g. rate-limit headers). */
  headers: ResponseHeaders;
  /** Free slots for middleware of other surfaces (the console's session, CSRF token). */
  [key: string]: unknown;
}

/** What a request presents to authenticate with. */
export interface RequestCredential {
  /** The raw credential (`Authorization: Bearer` or `x-api-key`), or null. */
  value: string | null;
  /** The credential as an API key, when it is key-shaped. */
  key: PresentedKey | null;
}

export interface Ctx {
  req: Request;
  url: URL;
  params: Record<string, string>;
  state: RequestState;
  deps: AppDeps;
  /** The peer's address, when the server knows it. */
  remoteAddr: string;
  /** Runs the next middleware, or the route. */
  next: () => Promise<Response>;
}

function nextOutsideChain(): Promise<Response> {
  return Promise.reject(new Error("next() outside a chain"));
}

/**
 * The `Ctx` of one request as the app makes it. `url` is parsed on first use (the router
 * needs only the pathname), from the prototype's getter: an accessor in an object
 * literal would cost a closure and a slow literal on every request.
 */
export class RequestContext implements Ctx {
  readonly req: Request;
  params: Record<string, string> = {};
  readonly state: RequestState;
  readonly deps: AppDeps;
  readonly remoteAddr: string;
  next: () => Promise<Response> = nextOutsideChain;
  #url: URL | undefined;

  constructor(
    req: Request,
    state: RequestState,
    deps: AppDeps,
    remoteAddr: string,
    url?: URL,
  ) {
    this.req = req;
    this.state = state;
    this.deps = deps;
    this.remoteAddr = remoteAddr;
    this.#url = url;
  }

  get url(): URL {
    return this.#url ??= new URL(this.req.url);
  }
}

export type Handler = (ctx: Ctx) => Response | Promise<Response>;
export type Handlers = Partial<Record<Method, Handler>>;
export type Middleware = (ctx: Ctx) => Response | Promise<Response>;

/** Runs `middlewares` then `last`, each able to call `ctx.next()`. */
export function runChain(
  ctx: Ctx,
  middlewares: Middleware[],
  last: Handler,
): Promise<Response> {
  let i = 0;
  // Not an async function: a step's own promise is passed on as it is, with no second
  // promise around it; a synchronous throw still becomes a rejection.
  const next = (): Promise<Response> => {
    try {
      const res = i < middlewares.length ? middlewares[i++](ctx) : last(ctx);
      return res instanceof Promise ? res : Promise.resolve(res);
    } catch (err) {
      return Promise.reject(err);
    }
  };
  ctx.next = next;
  return next();
}

const JSON_CONTENT_TYPE = "application/json; charset=utf-8";

/** A JSON response with the request's shared headers. */
export function json(
  body: unknown,
  status = 200,
  headers?: HeadersInit,
): Response {
  if (headers === undefined) {
    return new Response(JSON.stringify(body), {
      status,
      headers: { "content-type": JSON_CONTENT_TYPE },
    });
  }
  const h = new Headers(headers);
  h.set("content-type", JSON_CONTENT_TYPE);
  return new Response(JSON.stringify(body), { status, headers: h });
}

/**
 * The headers of `RequestState.headers`: names and values kept in a plain map (lower-case
 * name → value), checked when `withHeaders` puts them on the response. A `Headers`
 * validates and searches its list on every `set`, which costs a fraction of a
 * microsecond each, several times a request.
 */
export class ResponseHeaders {
  readonly #map = new Map<string, string>();

  /**
   * Sets `name` (any case) to `value`, trimmed of HTTP whitespace like `Headers`. Throws
   * a `TypeError`, as `Headers` does, for a name that is not a token or a value with a
   * NUL, CR or LF, or a character beyond U+00FF.
   */
  set(name: string, value: string): void {
    this.#map.set(checkedName(name), checkedValue(value));
  }

  /** Appends `value` to `name`, comma-joined like `Headers.append`. */
  append(name: string, value: string): void {
    const key = checkedName(name);
    const v = checkedValue(value);
    const had = this.#map.get(key);
    this.#map.set(key, had === undefined ? v : had + ", " + v);
  }

  delete(name: string): void {
    this.#map.delete(name.toLowerCase());
  }

  get(name: string): string | null {
    return this.#map.get(name.toLowerCase()) ?? null;
  }

  has(name: string): boolean {
    return this.#map.has(name.toLowerCase());
  }

  get size(): number {
    return this.#map.size;
  }

  /** The headers set so far, lower-case name → value, in the order first set. */
  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.#map.entries();
  }
}

function isHttpWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const BAD_HEADER_VALUE = /[\0\r\n\u0100-\uffff]/;

function checkedName(name: string): string {
  if (!HEADER_NAME.test(name)) {
    throw new TypeError(`Invalid header name: "${name}"`);
  }
  return name.toLowerCase();
}

function checkedValue(value: string): string {
  const v = trimHttpWhitespace(value);
  if (BAD_HEADER_VALUE.test(v)) {
    throw new TypeError(`Invalid header value for a response header`);
  }
  return v;
}

/** `value` without leading and trailing HTTP whitespace (most values have none). */
function trimHttpWhitespace(value: string): string {
  value = String(value);
  let start = 0;
  let end = value.length;
  while (start < end && isHttpWhitespace(value.charCodeAt(start))) start++;
  while (end > start && isHttpWhitespace(value.charCodeAt(end - 1))) end--;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

function isEmpty(extra: ResponseHeaders | Headers): boolean {
  if (extra instanceof ResponseHeaders) return extra.size === 0;
  for (const _ of extra.keys()) return false;
  return true;
}

/**
 * Copies `extra` (and `more`, name → value) into `res`'s headers where `res` does not
 * set them itself, cloning the response when its headers are immutable.
 */
export function withHeaders(
  res: Response,
  extra: ResponseHeaders | Headers,
  more?: Record<string, string>,
): Response {
  if (isEmpty(extra) && more === undefined) return res;
  try {
    copyMissing(res.headers, extra, more);
    return res;
  } catch {
    const headers = new Headers(res.headers);
    copyMissing(headers, extra, more);
    return new Response(res.body, {
      status: res.status,
      statusText: res.statusText,
      headers,
    });
  }
}

function copyMissing(
  target: Headers,
  extra: ResponseHeaders | Headers,
  more?: Record<string, string>,
): void {
  for (const [k, v] of extra) {
    if (!target.has(k)) target.set(k, v);
  }
  if (more !== undefined) {
    for (const k in more) if (!target.has(k)) target.set(k, more[k]);
  }
}

/**
 * `Deno.upgradeWebSocket`, with a request that is no valid upgrade (no or a bad
 * `Sec-WebSocket-Key`, another `Sec-WebSocket-Version`) answered 400
 * `AVTR_REQUEST_INVALID` rather than with the `TypeError` Deno throws (a 500).
 */
export function upgradeWebSocket(
  req: Request,
  options?: Deno.UpgradeWebSocketOptions,
): Deno.WebSocketUpgrade {
  try {
    return Deno.upgradeWebSocket(req, options);
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    throw new ApiError(
      "AVTR_REQUEST_INVALID",
      "This endpoint takes a WebSocket upgrade",
    );
  }
}
