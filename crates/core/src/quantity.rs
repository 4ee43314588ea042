//! Kubernetes resource quantities parsed to integers.
//!
//! The grammar is Kubernetes' own (`k8s.io/apimachinery/pkg/api/resource`):
//! a signed decimal number followed by a binary suffix (`Ki` … `Ei`), a
//! decimal suffix (`n`, `u`, `m`, `k`, `M`, `G`, `T`, `P`, `E`) or an exponent
//! (`e3`, `E-2`). Values are rounded up to the requested scale, as
//! `Quantity.Value()` and `Quantity.MilliValue()` do, so `0.1m` CPU is 1
//! millicore and `1.5` bytes is 2.

use std::fmt;

/// Why a quantity string is not a valid Kubernetes quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The string is empty.
    #[error("quantity is empty")]
    Empty,
    /// The number part is malformed.
    #[error("quantity {0:?} has no valid number")]
    Number(String),
    /// The suffix is not one Kubernetes knows.
    #[error("quantity {0:?} has an unknown suffix")]
    Suffix(String),
    /// The value does not fit in a 64-bit integer at the requested scale.
    #[error("quantity {0:?} is too large")]
    Overflow(String),
}

/// A parsed quantity: `digits × 10^exp10 × 2^exp2`, with its sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Parsed {
    negative: bool,
    digits: u128,
    exp10: i32,
    exp2: u32,
}

fn parse(s: &str) -> Result<Parsed, QuantityError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(QuantityError::Empty);
    }
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut negative = false;
    if bytes[0] == b'+' || bytes[0] == b'-' {
        negative = bytes[0] == b'-';
        i = 1;
    }
    let mut digits: u128 = 0;
    let mut exp10: i32 = 0;
    let mut seen_digit = false;
    let mut seen_dot = false;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_digit() {
            seen_digit = true;
            // Digits past 38 significant places cannot matter for i64 results
            // but would overflow u128: drop them, keeping the magnitude.
            if digits < u128::MAX / 100 {
                digits = digits * 10 + u128::from(c - b'0');
                if seen_dot {
                    exp10 -= 1;
                }
            } else if !seen_dot {
                exp10 += 1;
            }
        } else if c == b'.' && !seen_dot {
            seen_dot = true;
        } else {
            break;
        }
        i += 1;
    }
    if !seen_digit {
        return Err(QuantityError::Number(s.to_owned()));
    }
    let suffix = &s[i..];
    let (e10, exp2) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        _ => {
            let rest = suffix
                .strip_prefix('e')
                .or_else(|| suffix.strip_prefix('E'))
                .ok_or_else(|| QuantityError::Suffix(s.to_owned()))?;
            let valid = !rest.is_empty()
                && rest.trim_start_matches(['+', '-']).bytes().all(|b| b.is_ascii_digit())
                && rest.len() - rest.trim_start_matches(['+', '-']).len() <= 1;
            if !valid {
                return Err(QuantityError::Suffix(s.to_owned()));
            }
            let e: i32 = rest.parse().map_err(|_| QuantityError::Overflow(s.to_owned()))?;
            (e, 0)
        }
    };
    Ok(Parsed {
        negative,
        digits,
        exp10: exp10.saturating_add(e10),
        exp2,
    })
}

/// Returns the quantity as an integer in units of `10^-scale` (scale 0 for
/// plain values, 3 for milli-values), rounded up away from zero like
/// Kubernetes' `ScaledValue`.
pub fn parse_scaled(s: &str, scale: i32) -> Result<i64, QuantityError> {
    let p = parse(s)?;
    let overflow = || QuantityError::Overflow(s.trim().to_owned());
    if p.digits == 0 {
        return Ok(0);
    }
    let mut num: u128 = p.digits;
    num = num
        .checked_shl(p.exp2)
        .filter(|v| v >> p.exp2 == num)
        .ok_or_else(overflow)?;
    let e = p.exp10.saturating_add(scale);
    let magnitude = if e >= 0 {
        let mul = u32::try_from(e)
            .ok()
            .and_then(|e| 10u128.checked_pow(e))
            .ok_or_else(overflow)?;
        num.checked_mul(mul).ok_or_else(overflow)?
    } else {
        let div = e
            .checked_neg()
            .and_then(|e| u32::try_from(e).ok())
            .and_then(|e| 10u128.checked_pow(e));
        match div {
            Some(div) => num.div_ceil(div),
            // Dividing by more than 10^38 leaves a non-zero fraction: round up to 1.
            None => 1,
        }
    };
    let v = i64::try_from(magnitude).map_err(|_| overflow())?;
    Ok(if p.negative { -v } else { v })
}

/// The plain value (`Quantity.Value()`), e.g. bytes for memory.
pub fn parse_value(s: &str) -> Result<i64, QuantityError> {
    parse_scaled(s, 0)
}

/// The milli-value (`Quantity.MilliValue()`), e.g. millicores for CPU.
pub fn parse_milli(s: &str) -> Result<i64, QuantityError> {
    parse_scaled(s, 3)
}

/// Formats bytes the way people read them (`1.5Gi`), for messages.
pub struct Bytes(pub i64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 6] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
        let mut v = self.0 as f64;
        let mut unit = "";
        for u in UNITS {
            if v.abs() < 1024.0 {
                break;
            }
            v /= 1024.0;
            unit = u;
        }
        if unit.is_empty() {
            write!(f, "{}", self.0)
        } else if (v - v.round()).abs() < 0.05 {
            write!(f, "{}{unit}", v.round())
        } else {
            write!(f, "{v:.1}{unit}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        let cases: &[(&str, i64)] = &[
            ("0", 0),
            ("1", 1),
            ("128974848", 128_974_848),
            ("129e6", 129_000_000),
            ("129M", 129_000_000),
            ("123Mi", 123 * 1024 * 1024),
            ("1Gi", 1 << 30),
            ("1.5Gi", 3 << 29),
            ("1k", 1000),
            ("1Ki", 1024),
            ("1E", 1_000_000_000_000_000_000),
            ("5Ei", 5 << 60),
            ("1.5", 2),   // rounds up
            ("100m", 1),  // 0.1 rounds up to 1
            ("-1.5", -2), // away from zero
            ("+3", 3),
            ("1e-3", 1),
            ("12E2", 1200),
            ("0.000001", 1),
            (" 2Mi ", 2 << 20),
            (".5", 1),
            ("5.", 5),
        ];
        for (s, want) in cases {
            assert_eq!(parse_value(s), Ok(*want), "{s}");
        }
    }

    #[test]
    fn milli_values() {
        let cases: &[(&str, i64)] = &[
            ("1", 1000),
            ("100m", 100),
            ("0.5", 500),
            ("250m", 250),
            ("1.0001", 1001), // rounds up
            ("0.1m", 1),
            ("2k", 2_000_000),
            ("1u", 1),
            ("500n", 1),
            ("3e-3", 3),
        ];
        for (s, want) in cases {
            assert_eq!(parse_milli(s), Ok(*want), "{s}");
        }
    }

    #[test]
    fn errors() {
        assert_eq!(parse_value(""), Err(QuantityError::Empty));
        assert_eq!(parse_value("abc"), Err(QuantityError::Number("abc".into())));
        assert_eq!(parse_value("1Qi"), Err(QuantityError::Suffix("1Qi".into())));
        assert_eq!(parse_value("1e"), Err(QuantityError::Suffix("1e".into())));
        assert_eq!(parse_value("1e+-2"), Err(QuantityError::Suffix("1e+-2".into())));
        assert_eq!(parse_value("1.2.3"), Err(QuantityError::Suffix("1.2.3".into())));
        assert_eq!(parse_value("16Ei"), Err(QuantityError::Overflow("16Ei".into())));
        assert_eq!(parse_value("1e30"), Err(QuantityError::Overflow("1e30".into())));
        assert_eq!(parse_milli("10E"), Err(QuantityError::Overflow("10E".into())));
        // Absurd exponents neither overflow the arithmetic nor panic.
        assert_eq!(
            parse_milli("1e2147483647"),
            Err(QuantityError::Overflow("1e2147483647".into()))
        );
        assert_eq!(parse_milli("1e-2147483648"), Ok(1));
        assert_eq!(
            parse_value("1e99999999999"),
            Err(QuantityError::Overflow("1e99999999999".into()))
        );
    }

    #[test]
    fn bytes_display() {
        assert_eq!(Bytes(512).to_string(), "512");
        assert_eq!(Bytes(3 << 29).to_string(), "1.5Gi");
        assert_eq!(Bytes(4 << 30).to_string(), "4Gi");
    }
}
