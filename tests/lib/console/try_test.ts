import assert from "node:assert/strict";
import {
  placeApiError,
  readTryForm,
  rememberTrySession,
  trySessionTenant,
} from "../../../lib/console/try_it.ts";
import { ApiError } from "../../../lib/errors.ts";
import { testApp, TestClock } from "../../_helpers.ts";
import { OPERATOR } from "../../../lib/principal.ts";

Deno.test("readTryForm builds the API's create body", async (t) => {
  await t.step("with an auth header", () => {
    const r = readTryForm(
      new URLSearchParams({
        tenant: " acme ",
        engine_url: " wss://engine.example/e ",
        header_name: "authorization",
        header_value: "Bearer s3cret",
        avatar_id: "leo",
        bg_id: "office",
        transport: "webrtc_sfu",
      }),
      OPERATOR,
    );
    assert.deepEqual(r.errors, {});
    assert.equal(r.input.tenant, "acme");
    assert.equal(JSON.stringify(r.input).includes("s3cret"), false);
    assert.deepEqual(r.body, {
      provider_type: "external_engine",
      provider_config: {
        external_engine: {
          url: "wss://engine.example/e",
          auth_headers: { authorization: "Bearer s3cret" },
        },
      },
      transport: "webrtc_sfu",
      avatar_config: { avatar_id: "leo", bg_id: "office" },
    });
  });
  await t.step("without one: no auth headers", () => {
    const r = readTryForm(
      new URLSearchParams({ tenant: "demo", engine_url: "wss://e.example" }),
      OPERATOR,
    );
    const engine = (r.body?.provider_config as Record<string, unknown>)
      .external_engine as Record<string, unknown>;
    assert.deepEqual(engine.auth_headers, {});
    assert.equal(r.body?.transport, "auto");
  });
  await t.step("an unknown transport is refused before the API", () => {
    const r = readTryForm(
      new URLSearchParams({
        tenant: "demo",
        engine_url: "wss://e.example",
        transport: "carrier_pigeon",
      }),
      OPERATOR,
    );
    assert.equal(r.body, null);
    assert.deepEqual(Object.keys(r.errors), ["transport"]);
  });
  await t.step("incomplete forms are refused before the API", () => {
    const r = readTryForm(
      new URLSearchParams({ tenant: "", engine_url: "", header_value: "x" }),
      OPERATOR,
    );
    assert.equal(r.body, null);
    assert.deepEqual(Object.keys(r.errors).sort(), [
      "engine_url",
      "header_name",
      "tenant",
    ]);
  });
});

Deno.test("placeApiError puts the API's error next to its field", () => {
  const at = (e: ApiError) => placeApiError(e).field;
  assert.equal(
    at(
      new ApiError("AVTR_PROVIDER_MISCONFIGURED", "bad url", {
        param: "provider_config.external_engine.url",
      }),
    ),
    "engine_url",
  );
  assert.equal(
    at(
      new ApiError("AVTR_PROVIDER_MISCONFIGURED", "bad header", {
        param: "provider_config.external_engine.auth_headers.x y",
      }),
    ),
    "header_name",
  );
  assert.equal(
    at(
      new ApiError("AVTR_RENDER_MISCONFIGURED", "no avatar", {
        param: "avatar_config.avatar_id",
      }),
    ),
    "avatar_id",
  );
  assert.equal(
    at(new ApiError("AVTR_PROVIDER_UNAVAILABLE", "engine down")),
    "engine_url",
  );
  assert.equal(at(new ApiError("AVTR_RENDER_CAPACITY", "full")), "form");
  assert.equal(
    at(
      new ApiError("AVTR_SFU_NOT_CONFIGURED", "no sfu", { param: "transport" }),
    ),
    "transport",
  );
  assert.equal(
    at(new ApiError("AVTR_SFU_CONNECTION_FAILED", "janus down")),
    "transport",
  );
  assert.equal(
    placeApiError(
      new ApiError("AVTR_PROVIDER_MISCONFIGURED", "bad url", {
        param: "provider_config.external_engine.url",
      }),
    ).message,
    "bad url (AVTR_PROVIDER_MISCONFIGURED, param provider_config.external_engine.url)",
  );
});

Deno.test("Try-it sessions belong to one console session for its lifetime", async () => {
  const clock = new TestClock();
  const app = await testApp({}, { clock });
  try {
    const deps = app.app.deps;
    await rememberTrySession(deps, "console-a", "session:one", "acme");
    assert.equal(
      await trySessionTenant(deps, "console-a", "session:one"),
      "acme",
    );
    assert.equal(
      await trySessionTenant(deps, "console-b", "session:one"),
      null,
    );
    assert.equal(
      await trySessionTenant(deps, "console-a", "session:two"),
      null,
    );
    // The cookie value itself is never part of the key.
    for await (const e of deps.kv.list({ prefix: ["console_try_sessions"] })) {
      assert.equal(JSON.stringify(e.key).includes("console-a"), false);
    }
    clock.advance(8 * 60 * 60 * 1000 + 1);
    assert.equal(
      await trySessionTenant(deps, "console-a", "session:one"),
      null,
    );
  } finally {
    await app.close();
  }
});
