import assert from "node:assert/strict";
import { TEST_ADMIN_KEY } from "../../../_helpers.ts";
import {
  fakeSignedUrl,
  startVendorCApi,
} from "../../../lib/providers/_vendor_c_api.ts";
import { driveTo, postCreate, sessionApp } from "./_helpers.ts";

Deno.test("credentials and media tokens never reach KV or the log, and the vault ends empty", async () => {
  const api = startVendorCApi("ok");
  const app = await sessionApp({ VENDOR_C_API_URL: api.origin });
  const deps = app.app.deps;
  const secrets = [
    "CS-vendor-a-7f3e1c",
    "AT-vendor-b-91d2aa",
    "EH-external-5b7c0d",
    "XI-vendor-c-api-44e1",
    "SU-vendor-c-signed-0c9b",
    fakeSignedUrl("agent-c-minted"),
  ];
  const bodies = [
    {
      provider_type: "vendor_a_realtime",
      provider_config: { vendor_a_realtime: { client_secret: secrets[0] } },
    },
    {
      provider_type: "vendor_b",
      provider_config: {
        vendor_b: { access_token: secrets[1], agent_id: "agent-b" },
      },
    },
    {
      provider_type: "external_engine",
      provider_config: {
        external_engine: {
          url: "wss://engine.example.com/x",
          auth_headers: { authorization: `Bearer ${secrets[2]}` },
          user_sample_rate: 16000,
        },
      },
    },
    {
      provider_type: "vendor_c",
      provider_config: {
        vendor_c: { agent_id: "agent-c-minted", api_key: secrets[3] },
      },
    },
    {
      provider_type: "vendor_c",
      provider_config: {
        vendor_c: {
          agent_id: "agent-c2",
          signed_url: `wss://api.elevenlabs.io/v1/convai/conversation?token=${
            secrets[4]
          }`,
        },
      },
    },
  ];
  const auth = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
  try {
    for (const [i, body] of bodies.entries()) {
      const headers = { "idempotency-key": `secret-${i}` };
      const res = await postCreate(app, body, { headers });
      assert.equal(res.status, 200);
      const created = await res.json();
      secrets.push(created.client_token, created.stream_metadata.session_token);
      const replay = await (await postCreate(app, body, { headers })).json();
      secrets.push(replay.client_token, replay.stream_metadata.session_token);
      const id = created.session_id;
      const refreshed = await (await app.request(
        `/v1/sessions/${id}/client-token`,
        { method: "POST", headers: auth },
      )).json();
      secrets.push(
        refreshed.client_token,
        refreshed.stream_metadata.session_token,
      );
      const status = await app.request(`/v1/sessions/${id}`, { headers: auth });
      const statusText = await status.text();
      for (const s of secrets) assert.equal(statusText.includes(s), false);
      await driveTo(deps, id, "active");
      const end = await app.request(`/v1/sessions/${id}/end`, {
        method: "POST",
        headers: auth,
      });
      assert.equal(end.status, 200);
      const endText = await end.text();
      for (const s of secrets) assert.equal(endText.includes(s), false);
    }
    assert.equal(deps.vault.size, 0);
    assert.equal(deps.renderSlots.inUse, 0);

    const dump: string[] = [];
    for await (const e of deps.kv.list({ prefix: [] })) {
      dump.push(JSON.stringify(
        { key: e.key, value: e.value },
        (_k, v) => typeof v === "bigint" ? v.toString() : v,
      ));
    }
    assert.ok(dump.some((d) => d.includes('"sessions"')));
    const kvText = dump.join("\n");
    const logText = app.log.lines.join("\n");
    assert.ok(logText.includes("session created"));
    for (const s of secrets) {
      assert.equal(kvText.includes(s), false, `KV holds ${s.slice(0, 12)}…`);
      assert.equal(logText.includes(s), false, `log holds ${s.slice(0, 12)}…`);
    }
    // Token payloads are not secret, but their signatures are: check those too.
    for (const token of secrets.filter((s) => s.startsWith("mt1."))) {
      const sig = token.split(".")[2];
      assert.equal(kvText.includes(sig), false);
      assert.equal(logText.includes(sig), false);
    }
  } finally {
    await app.close();
    await api.close();
  }
});
