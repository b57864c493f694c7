/**
 * The error a configuration rule throws: `main.ts` prints its message and exits 2. A
 * module of its own so every config module (lib/config.ts, lib/config_nodes.ts) throws
 * it while validation runs one way: lib/config.ts reads lib/config_nodes.ts, never back.
 */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}
