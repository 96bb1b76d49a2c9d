//! Messages pieced together from their texts and numbers, not formatted: the package's wasm
//! module then holds no `core::fmt` machinery (`format!`, `write!`, `to_string()` of a
//! number or a `Display` type), which only these messages kept once panics became plain
//! traps (issue 35).

/// `pieces` one after the other: one loop of `push_str`, not std's `concat` (its length
/// sum and copy specialised by separator were twice the bytes).
#[must_use]
#[inline(never)]
pub fn concat(pieces: &[&str]) -> String {
    let mut s = String::new();
    for p in pieces {
        s.push_str(p);
    }
    s
}

/// Appends `n` in decimal, written by hand: no integer `Display` machinery at the call.
pub fn push_decimal(s: &mut String, n: usize) {
    // The largest power of ten in `n` first (no overflow: `p * 10 <= n`), then each digit
    // pushed from the left.
    let mut p = 1;
    while n / p >= 10 {
        p *= 10;
    }
    loop {
        s.push(char::from(b'0' + (n / p % 10) as u8));
        if p == 1 {
            break;
        }
        p /= 10;
    }
}

/// `true` or `false`, as `Display` writes a boolean.
#[must_use]
pub fn boolean(b: bool) -> &'static str {
    if b {
        "true"
    } else {
        "false"
    }
}

/// `v` as JSON text, through serde_json's writer of a `Value` (which never fails for one):
/// one call of it for every message and number written from a value (issue 35).
#[must_use]
#[inline(never)]
pub fn json(v: &serde_json::Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_as_display_writes_them() {
        for n in [0, 1, 9, 10, 99, 100, 1203, 4_000_000, 2_147_483_647, u32::MAX as usize, usize::MAX] {
            let mut s = String::from("x");
            push_decimal(&mut s, n);
            assert_eq!(s, format!("x{n}"));
        }
        assert_eq!(boolean(true), true.to_string());
        assert_eq!(boolean(false), false.to_string());
    }
}
