/**
 * The KV handle with every operation counted and timed (DECISIONS 10's KV operation
 * latency and errors; the sizing of docs/operations.md): reads, writes, deletes, lists
 * and atomic commits, by the first part of their key (a fixed name of this code's:
 * `sessions`, `instances`, …) and their result (`ok`, `error`, and `conflict` for a
 * commit whose checks failed). Everything else goes to the handle untouched.
 */

/** Where the counts and times go (lib/metrics/registry.ts). */
export interface KvMeter {
  /** One operation; `seconds` null when it is not timed (a list, read lazily). */
  kvOp(
    op: string,
    prefix: string,
    result: string,
    seconds: number | null,
  ): void;
}

/** A key's first part as a label: one of this code's fixed names, else `other`. */
export function prefixOf(key: Deno.KvKey | undefined): string {
  const p = key?.[0];
  return typeof p === "string" && /^[a-z_]{1,40}$/.test(p) ? p : "other";
}

async function timed<T>(
  meter: KvMeter,
  op: string,
  key: Deno.KvKey | undefined,
  work: Promise<T>,
  resultOf: (v: T) => string = () => "ok",
): Promise<T> {
  const t0 = performance.now();
  try {
    const v = await work;
    meter.kvOp(op, prefixOf(key), resultOf(v), (performance.now() - t0) / 1000);
    return v;
  } catch (err) {
    meter.kvOp(op, prefixOf(key), "error", (performance.now() - t0) / 1000);
    throw err;
  }
}

/** `op` with its commit counted, by the first key it checks or changes. */
function meteredAtomic(
  op: Deno.AtomicOperation,
  meter: KvMeter,
): Deno.AtomicOperation {
  let first: Deno.KvKey | undefined;
  const note = (key: Deno.KvKey | undefined) => first ??= key;
  const proxy: Deno.AtomicOperation = new Proxy(op, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target);
      if (typeof v !== "function") return v;
      if (prop === "commit") {
        return () =>
          timed(
            meter,
            "commit",
            first,
            target.commit(),
            (r) => r.ok ? "ok" : "conflict",
          );
      }
      return (...args: unknown[]) => {
        if (prop === "check") {
          note((args[0] as Deno.AtomicCheck | undefined)?.key);
        } else if (prop === "mutate") {
          note((args[0] as Deno.KvMutation | undefined)?.key);
        } else if (prop !== "enqueue") {
          note(args[0] as Deno.KvKey);
        }
        v.apply(target, args);
        return proxy;
      };
    },
  });
  return proxy;
}

/** `kv` with its operations counted and timed into `meter`. */
export function meteredKv(kv: Deno.Kv, meter: KvMeter): Deno.Kv {
  return new Proxy(kv, {
    get(target, prop) {
      switch (prop) {
        case "get":
          return (
            key: Deno.KvKey,
            o?: { consistency?: Deno.KvConsistencyLevel },
          ) => timed(meter, "get", key, target.get(key, o));
        case "getMany":
          return (
            keys: Deno.KvKey[],
            o?: { consistency?: Deno.KvConsistencyLevel },
          ) => timed(meter, "get_many", keys[0], target.getMany(keys, o));
        case "set":
          return (key: Deno.KvKey, value: unknown, o?: { expireIn?: number }) =>
            timed(meter, "set", key, target.set(key, value, o));
        case "delete":
          return (key: Deno.KvKey) =>
            timed(meter, "delete", key, target.delete(key));
        case "list":
          return (selector: Deno.KvListSelector, o?: Deno.KvListOptions) => {
            const key = "prefix" in selector
              ? selector.prefix
              : "start" in selector
              ? selector.start
              : undefined;
            meter.kvOp("list", prefixOf(key), "ok", null);
            return target.list(selector, o);
          };
        case "atomic":
          return () => meteredAtomic(target.atomic(), meter);
      }
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}
