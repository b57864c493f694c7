import assert from "node:assert/strict";
import {
  credentialsFor,
  errorText,
  parseUrl,
} from "../../../lib/providers/adapter.ts";
import { EngineStartError } from "../../../lib/providers/port.ts";

Deno.test("credentialsFor() narrows matching credentials and refuses others", () => {
  const creds = { type: "vendor_b", access_token: "t", agent_id: "a" } as const;
  assert.equal(credentialsFor(creds, "vendor_b").agent_id, "a");
  assert.throws(
    () => credentialsFor(creds, "vendor_c"),
    (e) =>
      e instanceof EngineStartError && e.kind === "misconfigured" &&
      e.message === "credentials mismatch",
  );
});

Deno.test("parseUrl() names the field, never the URL, when it cannot parse", () => {
  assert.equal(parseUrl("wss://x.example/a", "m").pathname, "/a");
  assert.throws(
    () => parseUrl("not a url secret-token", "endpoint invalid"),
    (e) =>
      e instanceof EngineStartError && e.kind === "misconfigured" &&
      e.message === "endpoint invalid",
  );
});

Deno.test("errorText() cuts to 500 characters and falls back on no text", () => {
  assert.equal(errorText("x".repeat(600)).length, 500);
  assert.equal(errorText(""), "provider error");
  assert.equal(errorText(42, "engine error"), "engine error");
  assert.equal(errorText("boom"), "boom");
});
