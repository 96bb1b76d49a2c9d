// The package's size as a browser downloads it: the wasm module and the JS glue, gzip -9.
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";

export function packageSize() {
  const gz = (path: string) => {
    const raw = readFileSync(path);
    return { raw: raw.length, gzip: gzipSync(raw, { level: 9 }).length };
  };
  return { wasm: gz("pkg/outbox_idb_bg.wasm"), glue: gz("pkg/outbox_idb.js") };
}
