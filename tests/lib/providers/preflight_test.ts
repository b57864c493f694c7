import assert from "node:assert/strict";
import { ApiError, type ErrorCode } from "../../../lib/errors.ts";
import type { ProviderCredentials } from "../../../lib/ports/providers.ts";
import { preflightProvider } from "../../../lib/providers/preflight.ts";
import { testApp } from "../../_helpers.ts";
import { fakeSignedUrl, startVendorCApi } from "./_vendor_c_api.ts";

const API_KEY = "xi-SECRET-preflight-0001";
const CREDS: ProviderCredentials = {
  type: "vendor_c",
  agent_id: "agent 7&x",
  api_key: API_KEY,
};

function rejectsWith(code: ErrorCode) {
  return (e: unknown) => {
    assert.ok(e instanceof ApiError, String(e));
    assert.equal(e.code, code);
    assert.doesNotMatch(e.message, /SECRET/);
    return true;
  };
}

Deno.test("preflightProvider() mints the vendor_c signed URL with the key in a header only", async (t) => {
  const api = startVendorCApi("ok");
  const app = await testApp({ VENDOR_C_API_URL: api.origin + "/" });
  const deps = app.app.deps;
  try {
    await t.step("ok", async () => {
      const out = await preflightProvider(
        deps,
        CREDS,
        new AbortController().signal,
      );
      assert.deepEqual(out, {
        ...CREDS,
        signed_url: fakeSignedUrl("agent 7&x"),
      });
      assert.equal(api.requests.length, 1);
      const url = new URL(api.requests[0].url);
      assert.equal(url.pathname, "/v1/convai/conversation/get-signed-url");
      assert.equal(url.searchParams.get("agent_id"), "agent 7&x");
      assert.equal(api.requests[0].apiKey, API_KEY);
      assert.doesNotMatch(api.requests[0].url, /SECRET/);
    });
    await t.step("upstream refusal → 502", async () => {
      api.mode = "error";
      await assert.rejects(
        preflightProvider(deps, CREDS, new AbortController().signal),
        rejectsWith("AVTR_PROVIDER_DOWNSTREAM_FAILED"),
      );
    });
    await t.step("an unusable answer → 502", async () => {
      api.mode = "garbage";
      await assert.rejects(
        preflightProvider(deps, CREDS, new AbortController().signal),
        rejectsWith("AVTR_PROVIDER_DOWNSTREAM_FAILED"),
      );
    });
    await t.step("an aborted start → 504", async () => {
      api.mode = "hold";
      const ctl = new AbortController();
      const arrived = api.nextRequest();
      const p = preflightProvider(deps, CREDS, ctl.signal);
      await arrived;
      ctl.abort();
      await assert.rejects(p, rejectsWith("AVTR_PROVIDER_TIMEOUT"));
      api.release();
    });
    await t.step("the key is in no log line", () => {
      assert.ok(app.log.lines.length > 0);
      for (const line of app.log.lines) assert.doesNotMatch(line, /SECRET/);
    });
  } finally {
    await app.close();
    await api.close();
  }
});

Deno.test("preflightProvider() refuses a signed URL off VENDOR_C_URL without naming either host", async (t) => {
  const host = "convai.private-deploy.example";
  const api = startVendorCApi("foreign", host);
  const app = await testApp({
    VENDOR_C_API_URL: api.origin,
    VENDOR_C_URL: `wss://${host}/v1/convai/conversation`,
  });
  const deps = app.app.deps;
  const refused = (e: unknown) => {
    rejectsWith("AVTR_PROVIDER_DOWNSTREAM_FAILED")(e);
    const err = e as ApiError;
    assert.doesNotMatch(err.message, /private-deploy|elsewhere/);
    return true;
  };
  try {
    await t.step("wss on another host → 502", async () => {
      await assert.rejects(
        preflightProvider(deps, CREDS, new AbortController().signal),
        refused,
      );
    });
    await t.step("an answer over 16 KiB → 502", async () => {
      api.mode = "huge";
      await assert.rejects(
        preflightProvider(deps, CREDS, new AbortController().signal),
        refused,
      );
    });
    await t.step("a URL on the configured endpoint is used", async () => {
      api.mode = "ok";
      const out = await preflightProvider(
        deps,
        CREDS,
        new AbortController().signal,
      );
      assert.equal(
        out.type === "vendor_c" && out.signed_url,
        fakeSignedUrl("agent 7&x", host),
      );
    });
    await t.step("no log line names either host", () => {
      assert.ok(app.log.lines.length > 0);
      for (const line of app.log.lines) {
        assert.doesNotMatch(line, /private-deploy|elsewhere/);
      }
    });
  } finally {
    await app.close();
    await api.close();
  }
});

Deno.test("preflightProvider() answers 503 when the provider is unreachable", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const app = await testApp({ VENDOR_C_API_URL: `https://localhost:${port}` });
  try {
    await assert.rejects(
      preflightProvider(app.app.deps, CREDS, new AbortController().signal),
      rejectsWith("AVTR_PROVIDER_UNAVAILABLE"),
    );
  } finally {
    await app.close();
  }
});

Deno.test("preflightProvider() passes other credentials through untouched", async (t) => {
  const app = await testApp({ VENDOR_C_API_URL: "https://localhost:1" });
  try {
    const cases: ProviderCredentials[] = [
      { type: "vendor_a_realtime", client_secret: "s" },
      { type: "vendor_b", access_token: "t", agent_id: "a" },
      {
        type: "external_engine",
        url: "wss://e.example/x",
        auth_headers: {},
        user_sample_rate: 16000,
      },
      { type: "vendor_c", agent_id: "public" },
      {
        type: "vendor_c",
        agent_id: "a",
        api_key: "k",
        signed_url: "wss://h.example/v1/convai/conversation?x=1",
      },
    ];
    for (const c of cases) {
      await t.step(`${c.type} ${Object.keys(c).join(",")}`, async () => {
        assert.deepEqual(
          await preflightProvider(
            app.app.deps,
            c,
            new AbortController().signal,
          ),
          c,
        );
      });
    }
  } finally {
    await app.close();
  }
});
