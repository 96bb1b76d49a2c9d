//! The JSON ↔ JS conversion itself: values going out are built by `JSON.parse` of their
//! text, and must equal what the property-by-property builder made before (the oracle
//! below); strings coming in are read in one crossing, and an unpaired surrogate must still
//! be told from a real U+FFFD.
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Object, Reflect};
use outbox_idb::convert::{from_js, to_js};
use serde_json::{json, Map, Number, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

/// The builder `to_js` replaced: one `Reflect.set` or `push` per value.
fn oracle(v: &Value) -> JsValue {
    match v {
        Value::Object(map) => {
            let o = Object::new();
            for (k, item) in map {
                Reflect::set(&o, &JsValue::from_str(k), &oracle(item)).unwrap();
            }
            o.into()
        }
        Value::Array(items) => items.iter().map(oracle).collect::<Array>().into(),
        Value::String(s) => JsValue::from_str(s),
        Value::Number(n) => JsValue::from_f64(n.as_f64().unwrap()),
        Value::Bool(b) => JsValue::from_bool(*b),
        Value::Null => JsValue::NULL,
    }
}

/// Deep equality that also compares key order, prototypes, array-ness and `-0`.
fn same(a: &JsValue, b: &JsValue) -> bool {
    let script = "function eq(a, b) {
          if (typeof a !== typeof b) return false;
          if (typeof a !== 'object' || a === null || b === null) return Object.is(a, b);
          if (Array.isArray(a) !== Array.isArray(b)) return false;
          if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
          const ka = Reflect.ownKeys(a), kb = Reflect.ownKeys(b);
          if (ka.length !== kb.length) return false;
          for (let i = 0; i < ka.length; i++) {
            if (ka[i] !== kb[i] || !eq(a[ka[i]], b[kb[i]])) return false;
          }
          return true;
        }
        return eq(a, b);";
    js("a, b", script).call2(&JsValue::NULL, a, b).unwrap().is_truthy()
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const TEXTS: &[&str] = &[
    "",
    "a",
    "b c",
    "0",
    "1",
    "10",
    "01",
    "-1",
    "4294967294",
    "4294967295",
    "1.5",
    "é",
    "😀",
    "\u{0}",
    "\u{1f}",
    "\u{2028}",
    "\u{FFFD}",
    "a\u{FFFD}b",
    "\"quoted\"\\",
    "$outbox",
    "constructor",
    "toString",
    "length",
    "日本語",
];

fn number(r: &mut Rng) -> Value {
    let f = |x: f64| Value::Number(Number::from_f64(x).unwrap());
    match r.below(12) {
        0 => f(-0.0),
        1 => json!(0),
        2 => json!(i64::MIN),
        3 => json!(u64::MAX),
        4 => json!(9_007_199_254_740_993u64),
        5 => f(1e21),
        6 => f(1.5e-7),
        7 => f(0.1),
        8 => f(f64::MAX),
        9 => f(f64::MIN_POSITIVE / 8.0),
        10 => json!(r.next() as i64),
        _ => {
            let x = f64::from_bits(r.next());
            if x.is_finite() {
                f(x)
            } else {
                f(-2.5)
            }
        }
    }
}

fn value(r: &mut Rng, depth: usize) -> Value {
    match r.below(if depth > 4 { 5 } else { 7 }) {
        0 => Value::Null,
        1 => Value::Bool(r.below(2) == 0),
        2 | 3 => number(r),
        4 => Value::String(TEXTS[r.below(TEXTS.len())].repeat(1 + r.below(3))),
        5 => Value::Array((0..r.below(5)).map(|_| value(r, depth + 1)).collect()),
        _ => {
            let mut map = Map::new();
            for _ in 0..r.below(6) {
                map.insert(TEXTS[r.below(TEXTS.len())].to_owned(), value(r, depth + 1));
            }
            Value::Object(map)
        }
    }
}

/// What the walker reads back: integers within ±(2^53 - 1) as integers, other numbers as
/// floats (and `-0` as `0`).
fn as_read(v: &Value) -> Value {
    match v {
        Value::Number(n) => {
            let x = n.as_f64().unwrap();
            if x.fract() == 0.0 && x.abs() <= 9_007_199_254_740_991.0 {
                json!(x as i64)
            } else {
                Value::Number(Number::from_f64(x).unwrap())
            }
        }
        Value::Array(items) => Value::Array(items.iter().map(as_read).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), as_read(v))).collect()),
        v => v.clone(),
    }
}

#[wasm_bindgen_test]
fn to_js_equals_the_property_by_property_builder_on_random_json() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    for i in 0..600 {
        let v = value(&mut r, 0);
        let built = to_js(&v);
        assert!(same(&built, &oracle(&v)), "case {i}: {v}");
        // And the walker reads it back as it reads any value the app gives.
        assert_eq!(from_js(&built, "body").unwrap(), as_read(&v), "case {i}");
    }
}

#[wasm_bindgen_test]
fn to_js_makes_proto_keys_own_properties() {
    // The old builder's `Reflect.set` called the `__proto__` setter: the field was lost and
    // the object got a prototype. `JSON.parse` makes an own property, as the app gave it.
    let v = json!({"a": 1, "__proto__": {"x": 1}, "list": [{"__proto__": 2}]});
    let built = to_js(&v);
    let check = "return Object.getPrototypeOf(o) === Object.prototype
        && JSON.stringify(Object.keys(o)) === '[\"a\",\"__proto__\",\"list\"]'
        && Object.getOwnPropertyDescriptor(o, '__proto__').value.x === 1
        && Object.getOwnPropertyDescriptor(o.list[0], '__proto__').value === 2";
    assert!(js("o", check).call1(&JsValue::NULL, &built).unwrap().is_truthy());
    assert_eq!(from_js(&built, "body").unwrap(), v, "and reads back the same");
}

#[wasm_bindgen_test]
fn strings_with_a_real_replacement_character_are_json_unpaired_surrogates_are_not() {
    let value = |e: &str| js("", &format!("return ({e});")).call0(&JsValue::NULL).unwrap();
    for (e, want) in [
        ("'\\uFFFD'", json!("\u{FFFD}")),
        ("'a\\uFFFDb😀'", json!("a\u{FFFD}b😀")),
        ("{ '\\uFFFD': '\\uD83D\\uDE00' }", json!({"\u{FFFD}": "😀"})),
    ] {
        assert_eq!(from_js(&value(e), "body").unwrap(), want, "{e}");
    }
    for (e, path) in [
        ("{ s: '\\uD800' }", "body.s"),
        ("{ s: '\\uFFFD\\uDC00' }", "body.s"),
        ("['\\uDE00\\uFFFD']", "body[0]"),
        ("{ k: { '\\uD800\\uFFFD': 1 } }", "body.k"),
    ] {
        let err = from_js(&value(e), "body").expect_err(e);
        let message = err.message;
        assert!(message.contains(&format!("`{path}`")) && message.contains("surrogate"), "{e}: {message}");
    }
}
