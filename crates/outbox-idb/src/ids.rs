//! Operation ids (UUID v4) drawn from a pool of random bytes: one `crypto.getRandomValues`
//! per 64 ids instead of one per id (an enqueue draws two: its id and the id a re-issue
//! would take; issue 12 counts every crossing of the JS boundary per row). The bytes are
//! the same cryptographic randomness; only the calls are batched.

use std::cell::RefCell;
use wasm_bindgen::prelude::*;

/// Bytes fetched at once: 64 ids.
const POOL_BYTES: usize = 1024;

thread_local! {
    /// Unused random bytes, taken from the end.
    static POOL: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

#[wasm_bindgen]
extern "C" {
    /// `crypto.getRandomValues` filling the bytes in place (pages, workers and Node all
    /// have it); caught where there is no `crypto` or it throws.
    #[wasm_bindgen(catch, js_namespace = crypto, js_name = getRandomValues)]
    fn get_random_values(buf: &mut [u8]) -> Result<JsValue, JsValue>;
}

/// `POOL_BYTES` from `crypto.getRandomValues`.
fn fetch() -> Option<Vec<u8>> {
    let mut buf = vec![0; POOL_BYTES];
    get_random_values(&mut buf).ok()?;
    Some(buf)
}

/// A fresh UUID v4 as text.
#[must_use]
pub fn new_id() -> String {
    let mut b = [0u8; 16];
    let drawn = POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        if pool.len() < 16 {
            *pool = fetch()?;
        }
        let at = pool.len() - 16;
        b.copy_from_slice(&pool[at..]);
        pool.truncate(at);
        Some(())
    });
    // No `crypto` to call (every browser, worker and Node 20 has it): `Math.random`, which
    // still makes ids that never repeat in practice, only guessable ones.
    if drawn.is_none() {
        for x in &mut b {
            *x = (js_sys::Math::random() * 256.0) as u8;
        }
    }
    hyphenated_v4(b)
}

/// The UUID v4 of 16 random bytes as lowercase hyphenated text (RFC 9562: version 4 in the
/// high nibble of byte 6, variant `10` in the high bits of byte 8), written by hand: no
/// formatting machinery and no `uuid` crate in the module (issue 35). The test below holds
/// it to the `uuid` crate's layout.
fn hyphenated_v4(mut b: [u8; 16]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let mut text = String::with_capacity(36);
    for (i, byte) in b.into_iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            text.push('-');
        }
        text.push(char::from(HEX[usize::from(byte >> 4)]));
        text.push(char::from(HEX[usize::from(byte & 15)]));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::{hyphenated_v4, new_id, POOL};
    use std::collections::HashSet;
    use wasm_bindgen::JsValue;
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    #[wasm_bindgen_test]
    fn ids_are_uuid_v4_and_never_repeat_across_refills_of_the_pool() {
        let ids: Vec<String> = (0..200).map(|_| new_id()).collect(); // three refills
        assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 200);
        for id in &ids {
            let u = uuid::Uuid::parse_str(id).expect("a UUID");
            assert_eq!(u.get_version_num(), 4, "{id}");
            assert_eq!(u.get_variant(), uuid::Variant::RFC4122, "{id}");
        }
    }

    #[wasm_bindgen_test]
    fn when_get_random_values_throws_ids_come_from_math_random_and_the_pool_refills_later() {
        let run = |src: &str| js_sys::Function::new_no_args(src).call0(&JsValue::NULL).unwrap();
        run("Object.defineProperty(crypto, 'getRandomValues', {value() { throw new Error('no'); }, configurable: true});");
        POOL.with(|p| p.borrow_mut().clear());
        let ids: Vec<String> = (0..20).map(|_| new_id()).collect();
        let pool_then = POOL.with(|p| p.borrow().len());
        run("delete crypto.getRandomValues;");
        assert_eq!(pool_then, 0, "nothing drawn while crypto throws");
        assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 20);
        for id in &ids {
            let u = uuid::Uuid::parse_str(id).expect("a UUID");
            assert_eq!((u.get_version_num(), u.get_variant()), (4, uuid::Variant::RFC4122), "{id}");
        }
        let _ = new_id();
        assert_eq!(POOL.with(|p| p.borrow().len()), 1024 - 16, "crypto's bytes again");
    }

    #[wasm_bindgen_test]
    fn the_text_is_the_uuid_crates_v4_of_the_same_bytes() {
        let patterns: [[u8; 16]; 4] = [
            [0; 16],
            [0xff; 16],
            std::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(11)),
            std::array::from_fn(|i| 0xf0u8.wrapping_sub(i as u8 * 9)),
        ];
        for b in patterns {
            let want = uuid::Builder::from_random_bytes(b).into_uuid().hyphenated().to_string();
            assert_eq!(hyphenated_v4(b), want, "{b:?}");
        }
    }
}
