/** Shared setup for the client/server.ts tests: a client wired to the in-process app. */
import assert from "node:assert/strict";
import {
  AvatarApiError,
  AvatarClient,
  type AvatarClientOptions,
  type CreateSessionRequest,
} from "../../client/server.ts";
import { TEST_ADMIN_KEY, type TestApp } from "../_helpers.ts";
import { validBody } from "../routes/v1/sessions/_helpers.ts";

interface Seen {
  method: string;
  url: URL;
  headers: Headers;
}

/** A client whose fetch is the app's handler; records requests and sleeps. */
export function clientFor(
  t: TestApp,
  options: Partial<AvatarClientOptions> & {
    /** Runs before each request reaches the app; throw to fake a network failure. */
    before?: (n: number) => void;
    /** Runs after the app answered; throw to lose the answer on the way back. */
    after?: (n: number, res: Response) => void;
  } = {},
) {
  const seen: Seen[] = [];
  const sleeps: number[] = [];
  const client = new AvatarClient({
    baseUrl: "http://localhost",
    apiKey: TEST_ADMIN_KEY,
    random: () => 0.5,
    sleep: (ms) => {
      sleeps.push(ms);
      t.clock?.advance(ms);
      return Promise.resolve();
    },
    fetch: async (input, init) => {
      const req = new Request(input, init);
      const n = seen.length;
      seen.push({
        method: req.method,
        url: new URL(req.url),
        headers: req.headers,
      });
      options.before?.(n);
      const res = await t.app.handler(req);
      options.after?.(n, res);
      return res;
    },
    ...options,
  });
  return { client, seen, sleeps };
}

/** Makes `getMany` of a session key fail `times` times: the store is "down". */
export function failSessionReads(t: TestApp, times: number): { left: number } {
  const state = { left: times };
  const kv = t.app.deps.kv;
  // Status reads go through `readKv` (the same handle on `:memory:`).
  t.app.deps.kv = t.app.deps.readKv = new Proxy(kv, {
    get(target, prop) {
      if (prop === "getMany") {
        return (
          keys: Deno.KvKey[],
          opts?: { consistency?: Deno.KvConsistencyLevel },
        ) => {
          if (state.left > 0 && keys.some((k) => k[0] === "sessions")) {
            state.left--;
            return Promise.reject(new Error("injected KV failure"));
          }
          return target.getMany(keys, opts);
        };
      }
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  return state;
}

export function engineBody(): CreateSessionRequest {
  return validBody("external_engine") as unknown as CreateSessionRequest;
}

export async function rejects(p: Promise<unknown>): Promise<AvatarApiError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof AvatarApiError, String(err));
    return err;
  }
  assert.fail("expected the call to fail");
}
