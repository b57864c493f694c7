/** The vendor_b adapter's tests: a fake Cartesia agents socket and an engine ready on it. */
import type { ProviderCredentials } from "../../../lib/ports/providers.ts";
import {
  createVendorBEngine,
  type VendorBOptions,
} from "../../../lib/providers/vendor_b.ts";
import { type Json, providerDeps, recordEvents } from "../../fakes/fake_ws.ts";
import {
  startVendorBFake,
  type VendorBFakeOptions,
} from "../../fakes/vendor_b_fake.ts";
import { startEngine } from "./_helpers.ts";

/** The access token and agent the fake accepts. */
export const TOKEN = "vb-access-token-0123456789abcdef";
export const AGENT = "agent 42/eu";
export const creds: Extract<ProviderCredentials, { type: "vendor_b" }> = {
  type: "vendor_b",
  access_token: TOKEN,
  agent_id: AGENT,
};

/** A fake Cartesia agents socket and a vendor_b factory pointed at it. */
export function setup(
  fakeOpts: VendorBFakeOptions = {},
  opts: VendorBOptions = { responseIdleMs: 150 },
) {
  const fake = startVendorBFake({
    tokens: [TOKEN],
    agents: [AGENT],
    ...fakeOpts,
  });
  const deps = providerDeps({ endpoints: { vendorBUrl: fake.url } });
  return { fake, deps, factory: createVendorBEngine(deps, opts) };
}

/** An engine started on `s` and ready (its `ack` came). */
export async function ready(
  s: ReturnType<typeof setup>,
  events = recordEvents(),
) {
  const conn = await startEngine(s.factory, creds, {
    events,
    sessionId: "session:b",
  });
  await events.waiter.until(() => events.ready.length > 0, "ack → ready");
  return conn;
}

export const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The fake's first peer's JSON frames of `event`. */
export const frames = (fake: { peers: { json: Json[] }[] }, event: string) =>
  fake.peers[0].json.filter((m) => m.event === event);
