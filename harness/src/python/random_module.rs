//! `random` as CPython's: the Mersenne Twister MT19937 (Modules/_randommodule.c) seeded
//! from an int as `random.seed(n)` seeds it (`init_by_array` over the 32-bit words of
//! `abs(n)`), and the Python-level methods of Lib/random.py on top of it (`random`,
//! `uniform`, `randint`/`randrange` through `_randbelow_with_getrandbits`, `choice`,
//! `shuffle`, `sample`), so that a seeded workload draws CPython's numbers and picks
//! CPython's items. A workload that never seeds starts as after `random.seed(0)` (CPython
//! seeds from the OS; a fixed seed keeps golden timelines deterministic). Seeds that are
//! not ints (strings are hashed with SHA-512 by CPython) are refused.

use super::interp::{Interpreter, R};
use super::natives::{Native, sequence_items};
use crate::heap::{ObjKind, Value};

const N: usize = 624;
const M: usize = 397;

/// The generator's state.
pub(super) struct Mersenne {
    state: Box<[u32; N]>,
    index: usize,
}

impl Default for Mersenne {
    fn default() -> Self {
        let mut mt = Mersenne {
            state: Box::new([0; N]),
            index: N,
        };
        mt.seed(0);
        mt
    }
}

impl Mersenne {
    fn init_genrand(&mut self, s: u32) {
        let mt = &mut self.state;
        mt[0] = s;
        for i in 1..N {
            mt[i] = 1812433253u32
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        self.index = N;
    }

    /// `random.seed(n)` of an int: `init_by_array` over `abs(n)`'s 32-bit words, least
    /// significant first (one zero word for 0).
    pub(super) fn seed(&mut self, n: i64) {
        let magnitude = n.unsigned_abs();
        let key: Vec<u32> = if magnitude >> 32 == 0 {
            vec![magnitude as u32]
        } else {
            vec![magnitude as u32, (magnitude >> 32) as u32]
        };
        self.init_genrand(19650218);
        let mt = &mut self.state;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let prev = mt[i - 1] ^ (mt[i - 1] >> 30);
            mt[i] = (mt[i] ^ prev.wrapping_mul(1664525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = mt[i - 1] ^ (mt[i - 1] >> 30);
            mt[i] = (mt[i] ^ prev.wrapping_mul(1566083941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        self.index = N;
    }

    fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            let mt = &mut self.state;
            for k in 0..N {
                let y = (mt[k] & 0x8000_0000) | (mt[(k + 1) % N] & 0x7fff_ffff);
                let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
                mt[k] = mt[(k + M) % N] ^ (y >> 1) ^ mag;
            }
            self.index = 0;
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `random.random()`: 53 bits from two draws.
    pub(super) fn random(&mut self) -> f64 {
        let a = self.next_u32() >> 5;
        let b = self.next_u32() >> 6;
        (a as f64 * 67108864.0 + b as f64) * (1.0 / 9007199254740992.0)
    }

    /// `getrandbits(k)` for `k <= 64`: 32-bit words, least significant first, the last
    /// one shifted down to the bits still wanted.
    fn getrandbits(&mut self, k: u32) -> u64 {
        if k <= 32 {
            return u64::from(self.next_u32() >> (32 - k));
        }
        let low = u64::from(self.next_u32());
        let high = u64::from(self.next_u32() >> (64 - k));
        low | (high << 32)
    }

    /// `_randbelow_with_getrandbits(n)` for `n > 0`.
    fn below(&mut self, n: u64) -> u64 {
        let k = 64 - n.leading_zeros();
        loop {
            let r = self.getrandbits(k);
            if r < n {
                return r;
            }
        }
    }
}

impl<'a> Interpreter<'a> {
    /// The `random` module's functions.
    pub(super) fn call_random(&mut self, n: Native, p: &[Value]) -> R<Value> {
        let number = |v: &Value| match v {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            _ => None,
        };
        match n {
            Native::RandomSeed => match p.first() {
                Some(&Value::Int(i)) => {
                    self.stdlib.mersenne.seed(i);
                    Ok(Value::None)
                }
                Some(&Value::Bool(b)) => {
                    self.stdlib.mersenne.seed(i64::from(b));
                    Ok(Value::None)
                }
                _ => self.unsupported(
                    "random.seed() of anything but an int (the model seeds CPython's generator from ints only)",
                ),
            },
            Native::RandomRandom => Ok(Value::Float(self.stdlib.mersenne.random())),
            Native::RandomUniform => {
                let (Some(a), Some(b)) = (p.first().and_then(number), p.get(1).and_then(number))
                else {
                    return self.error("TypeError: uniform() needs two numbers");
                };
                Ok(Value::Float(a + (b - a) * self.stdlib.mersenne.random()))
            }
            Native::RandomRandint => match p {
                [Value::Int(a), Value::Int(b)] if a <= b => {
                    let width = (b - a + 1) as u64;
                    Ok(Value::Int(a + self.stdlib.mersenne.below(width) as i64))
                }
                [Value::Int(a), Value::Int(b)] => self.error(format!(
                    "ValueError: empty range for randrange() ({a}, {}, {})",
                    b + 1,
                    b + 1 - a
                )),
                _ => self.error("TypeError: randint() takes two ints"),
            },
            Native::RandomChoice => {
                let [seq] = p else {
                    return self.error("TypeError: choice() takes exactly one argument");
                };
                let items = sequence_items(self, *seq)?;
                if items.is_empty() {
                    return self.error("IndexError: Cannot choose from an empty sequence");
                }
                let i = self.stdlib.mersenne.below(items.len() as u64) as usize;
                self.heap.incref(items[i]);
                Ok(items[i])
            }
            Native::RandomShuffle => {
                let [Value::Obj(list)] = p else {
                    return self.error("TypeError: shuffle() takes a list");
                };
                let ObjKind::List(items) = self.heap.kind(*list) else {
                    return self.unsupported("random.shuffle() of anything but a list");
                };
                let mut items = items.clone();
                for i in (1..items.len()).rev() {
                    let j = self.stdlib.mersenne.below(i as u64 + 1) as usize;
                    items.swap(i, j);
                }
                if let ObjKind::List(slot) = self.heap.kind_mut(*list) {
                    *slot = items;
                }
                Ok(Value::None)
            }
            Native::RandomSample => self.random_sample(p),
            _ => self.error("TypeError: not a random function"),
        }
    }

    /// `random.sample(population, k)`: Lib/random.py's two strategies (a pool list for
    /// small populations, a set of picked indices for large ones), the same draws; the
    /// result list is a new object, the pool or the set is made and freed on the way.
    fn random_sample(&mut self, p: &[Value]) -> R<Value> {
        let [population, Value::Int(k)] = p else {
            return self.error("TypeError: sample() takes a population and an int k");
        };
        let items = sequence_items(self, *population)?;
        let n = items.len();
        let k = *k;
        if k < 0 || k as usize > n {
            return self.error("ValueError: Sample larger than population or is negative");
        }
        let k = k as usize;
        let result = self.alloc(ObjKind::List(vec![Value::None; k]));
        let mut setsize = 21usize;
        if k > 5 {
            // 4 ** ceil(log(3k, 4))
            let exponent = ((k * 3) as f64).log(4.0).ceil() as u32;
            setsize += 4usize.pow(exponent);
        }
        let mut picked = Vec::with_capacity(k);
        if n <= setsize {
            let pool_list = self.alloc(ObjKind::List(Vec::new()));
            let mut pool = items.clone();
            for i in 0..k {
                let j = self.stdlib.mersenne.below((n - i) as u64) as usize;
                picked.push(pool[j]);
                pool[j] = pool[n - i - 1];
            }
            self.heap.decref_id(pool_list);
        } else {
            let set = self.alloc(ObjKind::Set {
                table: Box::default(),
                frozen: false,
            });
            let mut selected = Vec::with_capacity(k);
            for _ in 0..k {
                let mut j = self.stdlib.mersenne.below(n as u64) as usize;
                while selected.contains(&j) {
                    j = self.stdlib.mersenne.below(n as u64) as usize;
                }
                selected.push(j);
                picked.push(items[j]);
            }
            self.heap.decref_id(set);
        }
        for &v in &picked {
            self.heap.incref(v);
        }
        if let ObjKind::List(slot) = self.heap.kind_mut(result) {
            *slot = picked;
        }
        Ok(Value::Obj(result))
    }
}

#[cfg(test)]
mod tests {
    use super::Mersenne;

    /// Printed by CPython 3.8 – 3.13: `random.seed(42); random.random()`, and the same
    /// after `random.seed(0)`.
    #[test]
    fn draws_are_cpythons() {
        let mut mt = Mersenne::default();
        mt.seed(42);
        assert_eq!(mt.random(), 0.6394267984578837);
        mt.seed(0);
        assert_eq!(mt.random(), 0.8444218515250481);
    }
}
