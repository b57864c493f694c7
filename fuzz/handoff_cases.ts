/**
 * The REST fuzzer's cases for a media node's handoff endpoint (issue 22), sent straight
 * to the node as an attacker on its network would: unsigned, malformed, mis-signed,
 * stale, made for another node, oversized, without a length, trickled (a body that
 * stalls), a body that is not the one signed, signed garbage, and replays of calls the
 * node has already taken. The fuzzer holds `NODE_SECRET`, as a compromised peer would,
 * to reach past the head checks.
 */
import { HANDOFF_PATH } from "../lib/nodes/handoff.ts";
import { SIGNATURE_HEADER, signCall } from "../lib/nodes/signing.ts";
import { garbageValue, type Rng } from "./_lib.ts";
import type { NodeTarget, RestCase } from "./rest_types.ts";

const enc = new TextEncoder();

/** A handoff body: usually the envelope's shape with a create body that fails. */
function handoffBody(rng: Rng): Uint8Array {
  if (rng.bool(0.3)) return rng.bytes(rng.int(0, 300));
  const v = rng.bool(0.3) ? garbageValue(rng) : {
    session_id: rng.pick([
      `session:01M83AHJ0NN1B3HBT5F5P${rng.int(10000, 99999)}`,
      rng.string(30),
    ]),
    tenant_id: rng.pick(["fuzz-handoff", rng.string(20), "__proto__"]),
    body: {
      provider_type: rng.pick(["external_engine", rng.string(10)]),
      provider_config: garbageValue(rng),
    },
    ...(rng.bool(0.2) ? { idempotency: garbageValue(rng) } : {}),
  };
  return enc.encode(JSON.stringify(v) ?? "null");
}

/** Generates handoff cases, remembering signed calls to replay them later. */
export class HandoffCases {
  #taken: { header: string; body: Uint8Array }[] = [];

  next(rng: Rng, node: NodeTarget): RestCase {
    const target = { method: "POST", path: HANDOFF_PATH, node: node.id };
    const body = handoffBody(rng);
    const now = Date.now();
    const base: RestCase = {
      kind: "handoff",
      to: "node",
      method: "POST",
      target: HANDOFF_PATH,
      headers: [["content-type", "application/json"]],
      body,
      secrets: [],
    };
    const signed = (b = body) => signCall(node.secret, target, b, now);
    const withSig = (sig: string): RestCase => ({
      ...base,
      headers: [...base.headers, [SIGNATURE_HEADER, sig]],
    });
    switch (rng.int(0, 11)) {
      case 0:
        return base;
      case 1:
        return withSig(rng.pick([
          rng.string(100),
          "t=1,v1=zz",
          signed().replace(/,h=/, ",x="),
          `${signed()},${signed()}`,
          "t=".padEnd(5000, "9"),
        ]));
      case 2:
        return withSig(signCall(rng.bytes(32), target, body, now));
      case 3:
        return withSig(
          signCall(
            node.secret,
            target,
            body,
            now + rng.pick([-1, 1]) * rng.int(31_000, 10 ** 9),
          ),
        );
      case 4:
        return withSig(
          signCall(
            node.secret,
            { ...target, node: rng.pick([crypto.randomUUID(), "x"]) },
            body,
            now,
          ),
        );
      case 5: {
        // Declares more than a handoff may be, sends a little (the node must not wait).
        const declared = rng.pick([128 * 1024 + 1, 10 ** 7, 2 ** 40]);
        return {
          ...withSig(signed()),
          headers: [
            ...withSig(signed()).headers,
            ["content-length", String(declared)],
          ],
          ownLength: true,
        };
      }
      case 6:
        return {
          ...withSig(signed()),
          headers: [
            ...withSig(signed()).headers,
            ["transfer-encoding", "chunked"],
          ],
          body: enc.encode(`${body.length.toString(16)}\r\n`),
          ownLength: true,
        };
      case 7:
        // A valid head whose body stops short: 408 at the node's deadline.
        return { ...withSig(signed()), stall: rng.int(0, body.length - 1) };
      case 8: {
        const other = new Uint8Array(body.length).fill(0x20);
        return { ...withSig(signed()), body: other };
      }
      case 9:
      case 10: {
        const sig = signed();
        this.#taken.push({ header: sig, body });
        if (this.#taken.length > 50) this.#taken.shift();
        return withSig(sig);
      }
      default: {
        const old = this.#taken.length ? rng.pick(this.#taken) : null;
        if (!old) return withSig(signed());
        return { ...withSig(old.header), body: old.body };
      }
    }
  }
}
