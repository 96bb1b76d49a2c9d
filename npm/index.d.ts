// Types of the package's entry point (index.js): everything of wasm-bindgen's glue, with
// `init` documented as this package implements it.
import type { InitInput, InitOutput } from "./outbox_idb.js";

export * from "./outbox_idb.js";

/**
 * Loads and instantiates the WebAssembly module; resolves once it is ready. Calling it again
 * returns the same promise, and `Outbox.open` calls it when the app has not. Left out, the
 * `.wasm` file next to the package's JavaScript is used: fetched in browsers and workers (a
 * bundler such as Vite serves it as an asset), read from disk in Node (20.16 or later).
 * Rejects with an `Error` whose `code` is `"NOT_INITIALIZED"` when the module cannot be loaded.
 */
export default function init(
  module_or_path?: { module_or_path: InitInput | Promise<InitInput> } | InitInput | Promise<InitInput>,
): Promise<InitOutput>;
