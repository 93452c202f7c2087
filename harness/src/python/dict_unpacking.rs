//! `{**a, 'k': v}`: a dict display with `**` items, built in the order of CPython's
//! bytecode (Python/compile.c `compiler_dict`), because the dicts it makes on the way are
//! GC-heap objects that move the collector's counter:
//!
//! - 3.9+: the first group of pairs is `BUILD_MAP n` (or `BUILD_MAP 0` when a `**` comes
//!   first) and becomes the result; each `**` is a `DICT_UPDATE` into it; each later group
//!   of pairs is a temporary `BUILD_MAP n` merged with `DICT_UPDATE` and freed. From 3.10 a
//!   run of pairs is cut after 17 (`elements * 2 > STACK_USE_GUIDELINE`), and such a group
//!   of more than 15 pairs is an empty dict filled with `MAP_ADD` (`compiler_subdict`).
//! - 3.8: every group of pairs is a `BUILD_MAP n` and every `**` operand stays on the value
//!   stack; `BUILD_MAP_UNPACK` then makes the result and merges them all, and the group
//!   dicts are freed.
//!
//! Measured on CPython 3.8.18 – 3.13.0 with the dict free list drained
//! (`harness/tests/vm_dict_unpacking.rs`).

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value};
use ruff_python_ast as ast;

/// One step of a display's bytecode: a group of pairs (a range of items) or a `**` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Pairs(usize, usize),
    Splat(usize),
}

/// The steps `compiler_dict` emits for a display whose items are `splat[i]` (true for `**`).
fn steps(splat: &[bool], minor: u8) -> Vec<Step> {
    let mut out = Vec::new();
    let mut elements = 0;
    for (i, &is_splat) in splat.iter().enumerate() {
        if is_splat {
            if elements > 0 {
                out.push(Step::Pairs(i - elements, i));
                elements = 0;
            }
            out.push(Step::Splat(i));
        } else if minor >= 10 && elements * 2 > 30 {
            out.push(Step::Pairs(i - elements, i + 1));
            elements = 0;
        } else {
            elements += 1;
        }
    }
    if elements > 0 {
        out.push(Step::Pairs(splat.len() - elements, splat.len()));
    }
    out
}

impl<'a> Interpreter<'a> {
    /// Evaluates a dict display that has at least one `**` item.
    pub(super) fn eval_dict_unpacking(&mut self, d: &'a ast::ExprDict) -> R<Value> {
        let minor = self.heap.profile.version.minor;
        let splat: Vec<bool> = d.items.iter().map(|i| i.key.is_none()).collect();
        let steps = steps(&splat, minor);
        if minor <= 8 {
            return self.build_map_unpack(d, &steps);
        }
        let mut result: Option<ObjId> = None;
        let r = self.dict_update_steps(d, &steps, &mut result);
        match (r, result) {
            (Ok(()), Some(dict)) => Ok(Value::Obj(dict)),
            (Ok(()), None) => unreachable!("a display with `**` has a step"),
            (Err(e), dict) => {
                if let Some(dict) = dict {
                    self.heap.decref_id(dict);
                }
                Err(e)
            }
        }
    }

    /// 3.9+: `BUILD_MAP` then one `DICT_UPDATE` per later step, into `result`.
    fn dict_update_steps(
        &mut self,
        d: &'a ast::ExprDict,
        steps: &[Step],
        result: &mut Option<ObjId>,
    ) -> R<()> {
        for &step in steps {
            match step {
                Step::Pairs(from, to) => {
                    let group = self.dict_of_pairs(&d.items[from..to])?;
                    match *result {
                        Some(dict) => {
                            let r = self.dict_merge_into(dict, Value::Obj(group));
                            self.heap.decref_id(group);
                            r?;
                        }
                        None => *result = Some(group),
                    }
                }
                Step::Splat(i) => {
                    let dict = match *result {
                        Some(dict) => dict,
                        None => {
                            let dict = self.alloc(ObjKind::Dict(Vec::new()));
                            *result = Some(dict);
                            dict
                        }
                    };
                    let mapping = self.eval(&d.items[i].value)?;
                    self.at(&d.items[i].value);
                    let r = self.dict_merge_into(dict, mapping);
                    self.heap.decref(mapping);
                    r?;
                }
            }
        }
        Ok(())
    }

    /// 3.8: every operand first, then `BUILD_MAP_UNPACK` makes the result and merges them.
    fn build_map_unpack(&mut self, d: &'a ast::ExprDict, steps: &[Step]) -> R<Value> {
        let mut operands = Vec::with_capacity(steps.len());
        for &step in steps {
            let v = match step {
                Step::Pairs(from, to) => self.dict_of_pairs(&d.items[from..to]).map(Value::Obj),
                Step::Splat(i) => self.eval(&d.items[i].value),
            };
            match v {
                Ok(v) => operands.push(v),
                Err(e) => {
                    self.heap.decref_all(operands);
                    return Err(e);
                }
            }
        }
        let dict = self.alloc(ObjKind::Dict(Vec::new()));
        let mut r = Ok(());
        for (&step, &operand) in steps.iter().zip(&operands) {
            if r.is_ok() {
                if let Step::Splat(i) = step {
                    self.at(&d.items[i].value);
                }
                r = self.dict_merge_into(dict, operand);
            }
        }
        self.heap.decref_all(operands);
        match r {
            Ok(()) => Ok(Value::Obj(dict)),
            Err(e) => {
                self.heap.decref_id(dict);
                Err(e)
            }
        }
    }

    /// `compiler_subdict`: a group of `key: value` pairs as a new dict. From 3.10 a group of
    /// more than 15 pairs is made empty first and filled pair by pair (`MAP_ADD`); smaller
    /// ones are made after their pairs are evaluated.
    fn dict_of_pairs(&mut self, items: &'a [ast::DictItem]) -> R<ObjId> {
        let dict_first = self.heap.profile.version.minor >= 10 && items.len() > 15;
        let first = dict_first.then(|| self.alloc(ObjKind::Dict(Vec::new())));
        let mut pairs = Vec::with_capacity(items.len());
        for item in items {
            match self.eval_dict_display_pair(item) {
                Ok((k, v)) => match first {
                    Some(dict) => self.dict_set(dict, k, v),
                    None => pairs.push((k, v)),
                },
                Err(e) => {
                    for (k, v) in pairs {
                        self.heap.decref(k);
                        self.heap.decref(v);
                    }
                    if let Some(dict) = first {
                        self.heap.decref_id(dict);
                    }
                    return Err(e);
                }
            }
        }
        let dict = first.unwrap_or_else(|| self.alloc(ObjKind::Dict(Vec::new())));
        for (k, v) in pairs {
            self.dict_set(dict, k, v);
        }
        Ok(dict)
    }

    /// `PyDict_Update(dict, mapping)` (borrowed `mapping`): later keys replace earlier ones
    /// and keep their first position, as in CPython.
    pub(super) fn dict_merge_into(&mut self, dict: ObjId, mapping: Value) -> R<()> {
        let items = match mapping {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Dict(items) => items.clone(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        match mapping {
            Value::Obj(id) if matches!(self.heap.kind(id), ObjKind::Dict(_)) => {}
            // A user mapping (`keys()` and `__getitem__`) would be merged by CPython.
            Value::Obj(id) if matches!(self.heap.kind(id), ObjKind::Instance { .. }) => {
                return self.unsupported(super::constructs::Construct::DictUnpacking.what());
            }
            _ => {
                let name = self.value_type_name(mapping);
                return self.error(format!("TypeError: '{name}' object is not a mapping"));
            }
        }
        for (k, v) in items {
            self.heap.incref(k);
            self.heap.incref(v);
            self.dict_set(dict, k, v);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{Step, steps};

    #[test]
    fn steps_follow_compiler_dict() {
        // {'a': 1, **x, 'b': 2}
        assert_eq!(
            steps(&[false, true, false], 11),
            [Step::Pairs(0, 1), Step::Splat(1), Step::Pairs(2, 3)]
        );
        // {**x, **y}
        assert_eq!(steps(&[true, true], 9), [Step::Splat(0), Step::Splat(1)]);
        // From 3.10 a run of pairs is cut after 17, not on 3.9.
        let mut long = vec![false; 20];
        long.insert(0, true);
        assert_eq!(
            steps(&long, 10),
            [Step::Splat(0), Step::Pairs(1, 18), Step::Pairs(18, 21)]
        );
        assert_eq!(steps(&long, 9), [Step::Splat(0), Step::Pairs(1, 21)]);
    }
}
