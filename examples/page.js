// The example page's script: asks the backend for a session, connects the avatar.
import { AvatarPlayer } from "/avatar.js";

const $ = (id) => document.getElementById(id);
const video = $("avatar");
// `?bg=studio` puts the avatar in its box; by default it stands on this page.
// `?decoder=video` plays over MSE in the <video> even where WebCodecs exists;
// `?decoder=webcodecs` uses WebCodecs wherever the browser has it.
const params = new URLSearchParams(location.search);
const bgId = params.get("bg") ?? "transparent";
// `?avatar=ph_…` shows one of the tenant's photo avatars (the console's Photo avatars page).
const avatarId = params.get("avatar") ?? undefined;
const asked = params.get("decoder");
const decoder = asked === "video" || asked === "webcodecs" ? asked : "auto";

function log(kind, role, text) {
  const li = document.createElement("li");
  li.dataset.kind = kind;
  if (role) li.dataset.role = role;
  li.textContent = text;
  $("log").append(li);
}

async function post(path, body) {
  const res = await fetch(path, {
    method: "POST",
    headers: body ? { "content-type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) throw new Error(`${path} answered ${res.status}`);
  return await res.json();
}

$("start").onclick = async () => {
  $("start").disabled = true;
  const s = await post("/api/avatar/sessions", {
    bg_id: bgId,
    avatar_id: avatarId,
  });
  const player = new AvatarPlayer({
    sessionId: s.session_id,
    token: s.client_token,
    expiresAt: s.expires_at,
    wsBaseUrl: s.ws_base_url,
    // webrtc_sfu plays over WebRTC, websocket_fmp4 over MSE: same player, same events.
    transport: s.transport,
    iceServers: s.ice_servers,
    video,
    decoder,
    refreshToken: () =>
      post(`/api/avatar/sessions/${encodeURIComponent(s.session_id)}/token`),
  });
  // Exposed for the console (and the end-to-end test).
  globalThis.avatarPlayer = player;
  player.on("state", ({ state, status }) => {
    $("state").textContent = status ? `${state} (${status})` : state;
  });
  // Captions fire when the avatar says them (in step with the mouth), not on arrival.
  player.on("caption", ({ role, text, final, heard }) => {
    if (role === "avatar" && heard) {
      $("caption").textContent = text;
      $("caption").dataset.at = String(Date.now());
    }
    if (final) log("transcript", role, heard ? text : `${text} (not heard)`);
  });
  player.on("error", ({ code, fatal }) => {
    if (code === "autoplay_blocked") {
      // Sound needs a gesture: the video plays muted until the next click.
      document.addEventListener("click", () => player.play().catch(() => {}), {
        once: true,
      });
    }
    log("error", null, `${fatal ? "Error" : "Notice"}: ${code}`);
  });
  // The indicator follows the video: events fire when playback reaches the speech.
  player.on("speaking", ({ speaking }) => {
    $("speaking").dataset.speaking = String(speaking);
    $("speaking").textContent = speaking ? "speaking" : "quiet";
  });
  player.on("interrupted", ({ played_ms }) => {
    // The rest of the sentence was never said: its caption goes with it.
    $("caption").textContent = "";
    log("notice", null, `Avatar interrupted after ${played_ms} ms`);
  });
  player.on("ended", ({ status, reason }) => {
    $("end-status").textContent = status ?? "over";
    $("end-reason").textContent = reason ?? "no reason given";
    $("ended").hidden = false;
    for (const id of ["mute", "interrupt", "end", "text", "send"]) {
      $(id).disabled = true;
    }
  });
  await player.connect();
  for (const id of ["mute", "interrupt", "end", "text", "send"]) {
    $(id).disabled = false;
  }

  $("say").onsubmit = (e) => {
    e.preventDefault();
    const text = $("text").value.trim();
    if (!text) return;
    player.sendText(text);
    $("text").value = "";
  };
  $("mute").onclick = () => {
    player.muted ? player.unmute() : player.mute();
    $("mute").textContent = player.muted ? "Unmute" : "Mute";
  };
  $("interrupt").onclick = () => player.interrupt();
  $("end").onclick = () =>
    post(`/api/avatar/sessions/${encodeURIComponent(s.session_id)}/end`);
};
