import assert from "node:assert/strict";
import { engineFactoryFor } from "../../../lib/providers/registry.ts";
import {
  EngineStartError,
  PROVIDER_TYPES,
  type ProviderCredentials,
  turnErrorCodeFor,
} from "../../../lib/ports/providers.ts";
import { classifyConnectFailure } from "../../../lib/providers/ws_client.ts";
import { providerDeps, recordEvents } from "../../fakes/fake_ws.ts";

Deno.test("engineFactoryFor() gives each provider type an adapter that checks its credentials", async (t) => {
  const other: ProviderCredentials = {
    type: "vendor_b",
    access_token: "t",
    agent_id: "a",
  };
  for (const type of PROVIDER_TYPES) {
    await t.step(type, async () => {
      const factory = engineFactoryFor(providerDeps(), type);
      const creds: ProviderCredentials = type === "vendor_b"
        ? { type: "vendor_c", agent_id: "a" }
        : other;
      await assert.rejects(
        factory({
          sessionId: "session:r",
          credentials: creds,
          events: recordEvents(),
          signal: new AbortController().signal,
        }),
        (e) => e instanceof EngineStartError && e.kind === "misconfigured",
      );
    });
  }
});

Deno.test("turnErrorCodeFor() maps messages to per-turn codes", () => {
  assert.equal(turnErrorCodeFor("STT provider timeout"), "stt_failed");
  assert.equal(turnErrorCodeFor("asr_error"), "stt_failed");
  assert.equal(turnErrorCodeFor("transcription failed"), "stt_failed");
  assert.equal(turnErrorCodeFor("speech-to-text down"), "stt_failed");
  assert.equal(turnErrorCodeFor("tts quota exceeded"), "tts_failed");
  assert.equal(turnErrorCodeFor("Text to speech failed"), "tts_failed");
  assert.equal(turnErrorCodeFor("voice synthesis error"), "tts_failed");
  assert.equal(turnErrorCodeFor("model overloaded"), "llm_failed");
  assert.equal(turnErrorCodeFor("settings updated"), "llm_failed");
});

Deno.test("classifyConnectFailure() maps Deno's upgrade errors to start-error kinds", () => {
  const kind = (m: string) => classifyConnectFailure(m).kind;
  assert.equal(
    kind("failed to connect to WebSocket: Invalid status code: 401"),
    "refused",
  );
  assert.equal(
    kind("failed to connect to WebSocket: Invalid status code: 503"),
    "unavailable",
  );
  assert.equal(
    kind(
      "failed to connect to WebSocket: Didn't receive h2 alpn, aborting connection",
    ),
    "refused",
  );
  assert.equal(
    kind("failed to connect to WebSocket: tcp connect error"),
    "refused",
  );
  assert.equal(
    kind("failed to connect to WebSocket: dns error"),
    "unavailable",
  );
  assert.equal(kind("invalid peer certificate: UnknownIssuer"), "refused");
  assert.equal(kind("something else"), "unavailable");
});
