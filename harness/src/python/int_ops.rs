//! Integer arithmetic with CPython's results on the model's 64-bit integers.
//!
//! CPython's ints are unbounded; the model keeps them in an `i64`. Every operation here either
//! gives CPython's exact result or says why it cannot: the result needs more than 64 bits
//! (the caller refuses it with a located "integers beyond 64 bits" error, never a wrap-around),
//! or CPython itself raises (`ZeroDivisionError`, `ValueError: negative shift count`, ...).
//! Nothing here panics, whatever the operands.

/// Why an integer operation has no 64-bit result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IntFault {
    /// CPython's result exists but needs more than 64 bits.
    TooBig,
    /// CPython raises this error (`Type: message`).
    Raises(&'static str),
}

pub(super) type IntResult = Result<i64, IntFault>;

impl IntFault {
    /// The workload error at the interpreter's current place.
    pub(super) fn raise<T>(self, it: &super::Interpreter<'_>) -> super::interp::R<T> {
        match self {
            IntFault::TooBig => it.unsupported("integers beyond 64 bits"),
            IntFault::Raises(message) => it.error(message),
        }
    }
}

/// An int result as a workload value, or its located error.
pub(super) fn to_value(
    it: &super::Interpreter<'_>,
    result: IntResult,
) -> super::interp::R<crate::heap::Value> {
    result
        .map(crate::heap::Value::Int)
        .or_else(|fault| fault.raise(it))
}

fn fits(v: i128) -> IntResult {
    i64::try_from(v).map_err(|_| IntFault::TooBig)
}

/// `a // b`, rounding towards negative infinity.
pub(super) fn floor_div(a: i64, b: i64) -> IntResult {
    if b == 0 {
        return Err(IntFault::Raises(
            "ZeroDivisionError: integer division or modulo by zero",
        ));
    }
    let (a, b) = (i128::from(a), i128::from(b));
    let q = a / b;
    let q = if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    };
    fits(q)
}

/// `a % b`, with the sign of `b`.
pub(super) fn modulo(a: i64, b: i64) -> IntResult {
    if b == 0 {
        return Err(IntFault::Raises(
            "ZeroDivisionError: integer division or modulo by zero",
        ));
    }
    let (a, b) = (i128::from(a), i128::from(b));
    let m = a % b;
    let m = if m != 0 && ((m < 0) != (b < 0)) {
        m + b
    } else {
        m
    };
    fits(m)
}

/// `a ** b` for `b >= 0` (negative exponents give floats: see [`negative_power`]).
pub(super) fn power(a: i64, b: i64) -> IntResult {
    debug_assert!(b >= 0);
    match a {
        0 => return Ok(i64::from(b == 0)),
        1 => return Ok(1),
        -1 => return Ok(if b % 2 == 0 { 1 } else { -1 }),
        _ => {}
    }
    u32::try_from(b)
        .ok()
        .and_then(|e| a.checked_pow(e))
        .ok_or(IntFault::TooBig)
}

/// `a ** b` for `b < 0`: a float, or CPython's error for a zero base.
pub(super) fn negative_power(a: i64, b: i64) -> Result<f64, IntFault> {
    if a == 0 {
        return Err(IntFault::Raises(
            "ZeroDivisionError: 0.0 cannot be raised to a negative power",
        ));
    }
    Ok((a as f64).powf(b as f64))
}

/// `a << b`.
pub(super) fn shift_left(a: i64, b: i64) -> IntResult {
    if b < 0 {
        return Err(IntFault::Raises("ValueError: negative shift count"));
    }
    if a == 0 {
        return Ok(0);
    }
    if b >= 64 {
        return Err(IntFault::TooBig);
    }
    fits(i128::from(a) << b)
}

/// `a >> b` (arithmetic: `-1 >> 100 == -1`).
pub(super) fn shift_right(a: i64, b: i64) -> IntResult {
    if b < 0 {
        return Err(IntFault::Raises("ValueError: negative shift count"));
    }
    Ok(a >> b.min(63))
}

/// `abs(a)`.
pub(super) fn absolute(a: i64) -> IntResult {
    a.checked_abs().ok_or(IntFault::TooBig)
}

/// `int(f)`: truncation towards zero.
pub(super) fn from_float(f: f64) -> IntResult {
    if f.is_nan() {
        return Err(IntFault::Raises(
            "ValueError: cannot convert float NaN to integer",
        ));
    }
    if f.is_infinite() {
        return Err(IntFault::Raises(
            "OverflowError: cannot convert float infinity to integer",
        ));
    }
    let t = f.trunc();
    // 2**63 is exactly representable; every float below it in magnitude that is >= -2**63
    // converts exactly.
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&t) {
        Ok(t as i64)
    } else {
        Err(IntFault::TooBig)
    }
}

/// Number of items of `range(start, stop, step)` (`step != 0`), as CPython computes it.
pub(super) fn range_len(start: i64, stop: i64, step: i64) -> u64 {
    let (start, stop, step) = (i128::from(start), i128::from(stop), i128::from(step));
    let n = if step > 0 && start < stop {
        (stop - start - 1) / step + 1
    } else if step < 0 && start > stop {
        (start - stop - 1) / (-step) + 1
    } else {
        0
    };
    // At most 2**64 - 1 for 64-bit bounds.
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// The `index`-th item of `range(start, stop, step)`, or `None` past its end.
pub(super) fn range_item(start: i64, stop: i64, step: i64, index: u64) -> Option<i64> {
    if index >= range_len(start, stop, step) {
        return None;
    }
    // Inside the range, so between `start` and `stop`: it fits.
    i64::try_from(i128::from(start) + i128::from(step) * i128::from(index)).ok()
}

/// `divmod(a, b)` of floats (`b != 0`), as CPython's `float_divmod`: the remainder takes the
/// sign of `b`, and the quotient is `(a - mod) / b` rounded to the nearest integral value.
pub(super) fn float_divmod(a: f64, b: f64) -> (f64, f64) {
    let mut m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 {
        if (b < 0.0) != (m < 0.0) {
            m += b;
            div -= 1.0;
        }
    } else {
        m = 0.0_f64.copysign(b);
    }
    let floordiv = if div != 0.0 {
        let f = div.floor();
        if div - f > 0.5 { f + 1.0 } else { f }
    } else {
        0.0_f64.copysign(a / b)
    };
    (floordiv, m)
}

#[cfg(test)]
mod tests {
    use super::*;
    const MIN: i64 = i64::MIN;

    #[test]
    fn division_follows_cpython_and_never_panics() {
        // Results measured with CPython 3.11.
        assert_eq!(floor_div(7, -2), Ok(-4));
        assert_eq!(floor_div(-7, 2), Ok(-4));
        assert_eq!(floor_div(-7, -2), Ok(3));
        assert_eq!(modulo(7, -2), Ok(-1));
        assert_eq!(modulo(-7, 2), Ok(1));
        assert_eq!(modulo(-7, -2), Ok(-1));
        assert_eq!(floor_div(MIN, -1), Err(IntFault::TooBig));
        assert_eq!(modulo(MIN, -1), Ok(0));
        assert_eq!(floor_div(MIN, 1), Ok(MIN));
        assert!(matches!(floor_div(1, 0), Err(IntFault::Raises(_))));
        assert!(matches!(modulo(1, 0), Err(IntFault::Raises(_))));
    }

    #[test]
    fn powers_shifts_and_abs_refuse_instead_of_wrapping() {
        assert_eq!(power(2, 62), Ok(1 << 62));
        assert_eq!(power(2, 63), Err(IntFault::TooBig));
        assert_eq!(power(0, i64::MAX), Ok(0));
        assert_eq!(power(-1, i64::MAX), Ok(-1));
        assert_eq!(power(1, i64::MAX), Ok(1));
        assert_eq!(
            negative_power(0, -1),
            Err(IntFault::Raises(
                "ZeroDivisionError: 0.0 cannot be raised to a negative power"
            ))
        );
        assert_eq!(negative_power(2, -1), Ok(0.5));
        assert_eq!(
            shift_right(1, -1),
            Err(IntFault::Raises("ValueError: negative shift count"))
        );
        assert_eq!(
            shift_left(1, -1),
            Err(IntFault::Raises("ValueError: negative shift count"))
        );
        assert_eq!(shift_left(1, 62), Ok(1 << 62));
        assert_eq!(shift_left(1, 63), Err(IntFault::TooBig));
        assert_eq!(shift_left(-1, 63), Ok(MIN));
        assert_eq!(shift_left(0, 1 << 40), Ok(0));
        assert_eq!(shift_right(-1, 1 << 40), Ok(-1));
        assert_eq!(shift_right(MIN, 63), Ok(-1));
        assert_eq!(absolute(MIN), Err(IntFault::TooBig));
        assert_eq!(absolute(-5), Ok(5));
    }

    #[test]
    fn float_conversion_refuses_what_does_not_fit() {
        assert_eq!(from_float(-2.7), Ok(-2));
        assert_eq!(from_float(1e300), Err(IntFault::TooBig));
        assert_eq!(
            from_float(9_223_372_036_854_775_808.0),
            Err(IntFault::TooBig)
        );
        assert_eq!(from_float(-9_223_372_036_854_775_808.0), Ok(MIN));
        assert!(
            matches!(from_float(f64::NAN), Err(IntFault::Raises(m)) if m.starts_with("ValueError"))
        );
        assert!(
            matches!(from_float(f64::INFINITY), Err(IntFault::Raises(m)) if m.starts_with("OverflowError"))
        );
    }

    #[test]
    fn ranges_with_huge_steps_end() {
        assert_eq!(range_len(0, 10, 3), 4);
        assert_eq!(range_len(10, 0, -3), 4);
        assert_eq!(range_len(0, 10, 1 << 62), 1);
        assert_eq!(range_len(MIN, i64::MAX, 1), u64::MAX);
        assert_eq!(range_len(0, 10, -1), 0);
        assert_eq!(range_item(0, 10, 1 << 62, 0), Some(0));
        assert_eq!(range_item(0, 10, 1 << 62, 1), None);
        assert_eq!(range_item(i64::MAX - 1, i64::MAX, i64::MAX, 1), None);
        assert_eq!(range_item(MIN, i64::MAX, i64::MAX, 2), Some(i64::MAX - 1));
    }
}
