//! The builtins about an object's identity: `id`, `hash` and `callable`. None allocates a
//! GC-heap object (CPython's `id` and `hash` return ints, untracked).
//!
//! `id(x)` is a stand-in address: the object's heap index scaled to a 16-byte-aligned
//! address, so that ids are distinct among live objects, stable for an object's life and
//! reused after it dies, as CPython's are; the number itself is not CPython's.
//! `hash(x)` is CPython's for what CPython hashes deterministically: ints, bools, floats
//! (`_Py_HashDouble`), tuples of these, `None` from 3.12; objects hash as
//! `_Py_HashPointer(id(x))` does, so `hash(obj) == id(obj) >> 4` holds as on CPython. A
//! `str` (randomised per process by `PYTHONHASHSEED`) and `None` before 3.12 (its address)
//! are refused, so that no result depends on a hash CPython does not fix.

use super::interp::{Interpreter, R};
use super::natives::Native;
use super::sets::{NONE_HASH, TupleHash};
use crate::heap::{ObjKind, Value, WrapperKind};

/// `_PyHASH_MODULUS` (2**61 - 1) and its bit count.
const MODULUS: u64 = (1 << 61) - 1;
const MODULUS_BITS: i32 = 61;
/// Where the stand-in addresses of objects start (a typical heap address on Linux).
const OBJECT_BASE: i64 = 0x7f00_0000_0000;
/// Stand-in addresses of the values the model keeps unboxed, by kind (each below the next).
const INT_BASE: i64 = 0x5500_0000_0000;
const STR_BASE: i64 = 0x6600_0000_0000;
const CONSTANT_BASE: i64 = 0x5400_0000_0000;

/// `_Py_HashDouble` (Python/pyhash.c): a float hashes as the rational it is, modulo 2**61-1.
fn float_hash(v: f64) -> Option<i64> {
    if v.is_nan() {
        return None; // NaN hashes by address from 3.10
    }
    if v.is_infinite() {
        return Some(if v > 0.0 { 314159 } else { -314159 });
    }
    let (mut m, mut e) = frexp(v);
    let sign: i64 = if m < 0.0 {
        m = -m;
        -1
    } else {
        1
    };
    let mut x: u64 = 0;
    while m != 0.0 {
        x = ((x << 28) & MODULUS) | (x >> (MODULUS_BITS - 28));
        m *= 268435456.0;
        e -= 28;
        let y = m as u64;
        m -= y as f64;
        x += y;
        if x >= MODULUS {
            x -= MODULUS;
        }
    }
    let e = if e >= 0 {
        e % MODULUS_BITS
    } else {
        MODULUS_BITS - 1 - ((-1 - e) % MODULUS_BITS)
    };
    x = ((x << e) & MODULUS) | (x >> (MODULUS_BITS - e));
    let h = x as i64 * sign;
    Some(if h == -1 { -2 } else { h })
}

/// C's `frexp`: `v == m * 2**e` with `0.5 <= |m| < 1` (`(0.0, 0)` for zero).
fn frexp(v: f64) -> (f64, i32) {
    if v == 0.0 {
        return (v, 0);
    }
    let bits = v.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32;
    if exponent == 0 {
        // Subnormal: scale into the normal range first.
        let (m, e) = frexp(v * 2f64.powi(64));
        return (m, e - 64);
    }
    let m = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (m, exponent - 1022)
}

fn int_hash(i: i64) -> i64 {
    let magnitude = (i.unsigned_abs() % MODULUS) as i64;
    let h = if i < 0 { -magnitude } else { magnitude };
    if h == -1 { -2 } else { h }
}

/// `_Py_HashPointer`: the address rotated right by 4 bits.
fn pointer_hash(address: i64) -> i64 {
    let h = (address as u64).rotate_right(4) as i64;
    if h == -1 { -2 } else { h }
}

impl<'a> Interpreter<'a> {
    /// `id(x)`, `hash(x)`, `callable(x)`.
    pub(super) fn call_identity_builtin(&mut self, n: Native, p: &[Value]) -> R<Value> {
        let name = match n {
            Native::IdFn => "id",
            Native::HashFn => "hash",
            _ => "callable",
        };
        let [x] = p else {
            return self.error(format!(
                "TypeError: {name}() takes exactly one argument ({} given)",
                p.len()
            ));
        };
        Ok(match n {
            Native::IdFn => Value::Int(self.stand_in_id(*x)),
            Native::HashFn => return self.builtin_hash(*x).map(Value::Int),
            _ => Value::Bool(self.callable(*x)),
        })
    }

    /// The stand-in address of a value (see the module note).
    fn stand_in_id(&self, v: Value) -> i64 {
        match v {
            Value::Obj(id) => OBJECT_BASE + i64::from(id.0) * 16,
            Value::Int(i) => INT_BASE + (i & 0xffff_ffff) * 32,
            Value::Str(s) => STR_BASE + i64::from(s.0) * 64,
            Value::None => CONSTANT_BASE,
            Value::Bool(b) => CONSTANT_BASE + 16 + 16 * i64::from(b),
            other => CONSTANT_BASE + 64 + (self.repr_text(other).len() as i64) * 16,
        }
    }

    /// `hash(x)` where CPython's value is fixed; refused where it is randomised.
    fn builtin_hash(&mut self, v: Value) -> R<i64> {
        let refuse = |it: &mut Self, what: &str| -> R<i64> {
            it.unsupported(format!(
                "hash() of {what} (CPython's differs per process; the model gives no stand-in)"
            ))
        };
        Ok(match v {
            Value::Int(i) => int_hash(i),
            Value::Bool(b) => i64::from(b),
            Value::Float(f) => match float_hash(f) {
                Some(h) => h,
                None => return refuse(self, "a NaN"),
            },
            Value::Str(_) => return refuse(self, "a str (randomised by PYTHONHASHSEED)"),
            Value::None if self.heap.profile.version.minor >= 12 => NONE_HASH,
            Value::None => return refuse(self, "None before 3.12 (its address)"),
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tuple(items) | ObjKind::NamedTuple { items, .. } => {
                    let items = items.clone();
                    let mut acc = TupleHash::new();
                    for item in &items {
                        acc.push(self.builtin_hash(*item)?);
                    }
                    acc.finish(items.len())
                }
                ObjKind::Instance { class, .. } if self.torch_class(*class).is_none() => {
                    use crate::python::user_hash::InstanceHash;
                    let class = *class;
                    match self.instance_hash(class) {
                        InstanceHash::Unhashable => {
                            let t = self.class_name(class);
                            return self.error(format!("TypeError: unhashable type: '{t}'"));
                        }
                        InstanceHash::User => return self.call_user_hash(v, ""),
                        InstanceHash::FrozenDataclass => {
                            return self.unsupported("hash() of a frozen dataclass instance");
                        }
                        InstanceHash::Identity => pointer_hash(self.stand_in_id(v)),
                    }
                }
                ObjKind::List(_) | ObjKind::Dict(_) | ObjKind::Deque { .. } => {
                    let t = self.heap.kind(id).type_name();
                    return self.error(format!("TypeError: unhashable type: '{t}'"));
                }
                ObjKind::Set { frozen: false, .. } => {
                    return self.error("TypeError: unhashable type: 'set'");
                }
                ObjKind::Set { frozen: true, .. } => return refuse(self, "a frozenset"),
                _ => pointer_hash(self.stand_in_id(v)),
            },
            _ => pointer_hash(self.stand_in_id(v)),
        })
    }

    /// `callable(x)`: functions, classes, methods, natives, instances whose class has
    /// `__call__` (every `nn.Module`), and the modelled wrappers that CPython can call.
    pub(in crate::python) fn callable(&self, v: Value) -> bool {
        match v {
            Value::Native(_) | Value::BoundNative(..) => true,
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Function(_) | ObjKind::Class(_) | ObjKind::BoundMethod { .. } => true,
                &ObjKind::Instance { class, .. } => {
                    self.torch_class(class).is_some()
                        || self
                            .names
                            .lookup("__call__")
                            .is_some_and(|call| self.class_lookup(class, call).is_some())
                }
                ObjKind::Wrapper(kind, _) => match kind {
                    // `staticmethod` objects became callable in 3.10.
                    WrapperKind::StaticMethod => self.heap.profile.version.minor >= 10,
                    WrapperKind::Partial
                    | WrapperKind::ContextManagerFunction
                    | WrapperKind::GradModeFunction
                    | WrapperKind::GeneratorContextManager
                    | WrapperKind::WeakRef
                    | WrapperKind::Finalize
                    | WrapperKind::Autocast
                    | WrapperKind::LruCache
                    | WrapperKind::LruCacheDecorator
                    | WrapperKind::DataclassDecorator
                    | WrapperKind::DataclassInit
                    | WrapperKind::DataclassEq
                    | WrapperKind::DataclassFrozenSetattr
                    | WrapperKind::BuiltinMethod => true,
                    _ => false,
                },
                _ => false,
            },
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::float_hash;

    /// Figures printed by CPython 3.8 – 3.13 (`hash(1.5)`, `hash(-0.1)`, `hash(1e300)`, `hash(5e-324)`).
    #[test]
    fn float_hash_is_cpythons() {
        assert_eq!(float_hash(1.5), Some(1152921504606846977));
        assert_eq!(float_hash(2.0), Some(2));
        assert_eq!(float_hash(-1.0), Some(-2));
        assert_eq!(float_hash(-0.1), Some(-230584300921369408));
        assert_eq!(float_hash(1e300), Some(1224995262755759164));
        assert_eq!(float_hash(5e-324), Some(16777216));
    }
}
