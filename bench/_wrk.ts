/**
 * wrk for bench/api.ts: the Lua scripts it runs (each thread counts responses by kind,
 * `done()` prints one `RESULT {...}` JSON line) and the run itself.
 */

/** The wrk binary (Debian's `wrk`). */
export const WRK = "/usr/bin/wrk";

export interface WrkResult {
  requests: number;
  seconds: number;
  rps: number;
  socket_errors: number;
  /** Script-specific counters (status classes, pairs). */
  counts: Record<string, number>;
}

const LUA_COMMON = `
local threads = {}
function setup(thread) table.insert(threads, thread) end
counts = {}
local function count(k) counts[k] = (counts[k] or 0) + 1 end
function done(summary, latency, requests)
  local agg = {}
  for _, t in ipairs(threads) do
    local c = t:get("counts")
    for k, v in pairs(c) do agg[k] = (agg[k] or 0) + v end
  end
  local parts = {}
  for k, v in pairs(agg) do table.insert(parts, string.format('"%s":%d', k, v)) end
  local e = summary.errors
  io.write(string.format(
    'RESULT {"requests":%d,"seconds":%.3f,"rps":%.1f,"socket_errors":%d,"counts":{%s}}\\n',
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    e.connect + e.read + e.write + e.timeout, table.concat(parts, ",")))
end
`;

export function luaGet(apiKey: string | null): string {
  return LUA_COMMON + `
${apiKey ? `wrk.headers["Authorization"] = "Bearer ${apiKey}"` : ""}
function response(status, headers, body) count("s" .. status) end
`;
}

/** GETs `paths` round robin (each wrk thread starts at its own offset). */
export function luaGetPaths(apiKey: string, paths: string[]): string {
  return LUA_COMMON + `
wrk.headers["Authorization"] = "Bearer ${apiKey}"
local paths = { ${paths.map((p) => `"${p}"`).join(", ")} }
local i = 0
function request()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
function response(status, headers, body) count("s" .. status) end
`;
}

export function luaPairs(apiKey: string, createBody: string): string {
  return LUA_COMMON + `
local create_body = [[${createBody}]]
local json_headers = { ["Authorization"] = "Bearer ${apiKey}", ["Content-Type"] = "application/json" }
local end_headers = { ["Authorization"] = "Bearer ${apiKey}" }
local queue = {}
function request()
  local id = table.remove(queue)
  if id then
    count("sent_end")
    return wrk.format("POST", "/v1/sessions/" .. id .. "/end", end_headers)
  end
  count("sent_create")
  return wrk.format("POST", "/v1/sessions", json_headers, create_body)
end
-- Responses do not say which request they answer: classify by body. Only end answers
-- 409 AVTR_SESSION_CONFLICT / AVTR_SESSION_ENDED or carries ended_at.
function response(status, headers, body)
  if body:find('"client_token"', 1, true) then
    table.insert(queue, body:match('"session_id":"([^"]+)"'))
    count("create_200")
  elseif body:find('"ended_at"', 1, true) then
    count("end_" .. status)
  else
    local code = body:match('"code":"([A-Z_]+)"') or "none"
    count(status .. "_" .. code)
  end
end
`;
}

/** The `RESULT {…}` line a load process printed, parsed; throws when it failed. */
export function resultOf<T>(out: Deno.CommandOutput, what: string): T {
  const text = new TextDecoder().decode(out.stdout);
  const line = text.split("\n").find((l) => l.startsWith("RESULT "));
  if (!out.success || !line) {
    throw new Error(
      `${what} failed: ${text}${new TextDecoder().decode(out.stderr)}`,
    );
  }
  return JSON.parse(line.slice("RESULT ".length)) as T;
}

/** How wrk runs: its threads, connections and seconds. */
export interface WrkOptions {
  threads: number;
  connections: number;
  seconds: number;
}

/** Runs wrk with the Lua script `lua` against `url`, and returns its `RESULT` line. */
export async function runWrk(
  url: string,
  lua: string,
  options: WrkOptions,
): Promise<WrkResult> {
  const script = await Deno.makeTempFile({ suffix: ".lua" });
  await Deno.writeTextFile(script, lua);
  try {
    const out = await new Deno.Command(WRK, {
      args: [
        "-t",
        String(options.threads),
        "-c",
        String(options.connections),
        "-d",
        `${options.seconds}s`,
        "--timeout",
        "5s",
        "-s",
        script,
        url,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    return resultOf<WrkResult>(out, "wrk");
  } finally {
    await Deno.remove(script);
  }
}
