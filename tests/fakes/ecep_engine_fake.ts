/**
 * A fake ECEP v1 engine (docs/engine-protocol.md) on real wss. It refuses upgrades
 * without `x-engine-key: <key>`, answers `session.start` with `session.ready`, and
 * answers `user.text` by its content: `fail` → a non-fatal error mid-turn, `fatal` → a
 * fatal error, `long` → a response that only ends on `interrupt`, `bye` → the engine
 * ends the conversation (closes its socket with 1000), anything else → a
 * response with agent audio and an agent transcript. `session.end` closes the socket
 * unless `stubborn`.
 */
import { type FakeWs, type Json, startFakeWs } from "./fake_ws.ts";

export interface EcepFakeOptions {
  key: string;
  agentRate?: number;
  stubborn?: boolean;
}

const audio = (samples: number) => new Uint8Array(samples * 2);

/** Starts the fake; connect to `.url`. */
export function startEcepFake(options: EcepFakeOptions): FakeWs {
  let open: string | null = null;
  let n = 0;
  return startFakeWs("/engine", {
    refuse: (req) =>
      req.headers.get("x-engine-key") === options.key
        ? undefined
        : new Response("unauthorized", { status: 401 }),
    onJson(peer, msg: Json) {
      switch (msg.type) {
        case "session.start":
          peer.send({
            type: "session.ready",
            agent_audio: {
              encoding: "pcm_s16le",
              sample_rate: options.agentRate ?? 16000,
            },
          });
          return;
        case "user.text": {
          if (msg.text === "bye") {
            peer.close(1000, "conversation over");
            return;
          }
          const id = `resp-${++n}`;
          peer.send({ type: "response.start", response_id: id });
          if (msg.text === "fail") {
            peer.send({
              type: "error",
              message: "text-to-speech backend failed",
              fatal: false,
            });
            peer.send({ type: "response.end", response_id: id });
          } else if (msg.text === "fatal") {
            peer.send({
              type: "error",
              message: "engine crashed",
              fatal: true,
            });
          } else if (msg.text === "long") {
            open = id;
            peer.send(audio(800));
          } else {
            peer.send({
              type: "transcript",
              role: "agent",
              text: `you said ${msg.text}`,
              final: true,
            });
            peer.send(audio(800));
            peer.send(audio(800));
            peer.send({ type: "response.end", response_id: id });
          }
          return;
        }
        case "interrupt":
          if (open) {
            peer.send(audio(800)); // in flight: the adapter drops it
            peer.send({ type: "response.end", response_id: open });
            open = null;
          }
          return;
        case "session.end":
          if (!options.stubborn) peer.close(1000, "bye");
          return;
      }
    },
  });
}
