//! `*` in displays (`[*a, *b]`, `(x, *y)`, `{*a, *b}`) and in assignment targets
//! (`a, *b = xs`, `for a, *rest in rows:`), as CPython's `LIST_EXTEND`/`SET_UPDATE` and
//! `UNPACK_EX` run them: a spread iterable is read to its end, a starred target gets a new
//! list of the middle items.

use super::{Interpreter, R};
use crate::heap::{ObjKind, Value};
use ruff_python_ast::Expr;

impl<'a> Interpreter<'a> {
    /// Evaluates display elements left to right, spreading each `*x` into its items. On an
    /// error what was already collected is released.
    pub(in crate::python) fn eval_spread(&mut self, elts: &'a [Expr]) -> R<Vec<Value>> {
        let mut items = Vec::with_capacity(elts.len());
        for x in elts {
            let read = match x {
                Expr::Starred(s) => self.eval(&s.value).and_then(|v| {
                    self.at(x);
                    let r = self.collect_items(v);
                    self.heap.decref(v);
                    r
                }),
                x => self.eval(x).map(|v| vec![v]),
            };
            match read {
                Ok(vs) => items.extend(vs),
                Err(e) => {
                    self.heap.decref_all(items);
                    return Err(e);
                }
            }
        }
        Ok(items)
    }

    /// `(x, *y)`: CPython builds a list and converts it (`LIST_TO_TUPLE`; up to 3.8
    /// `BUILD_TUPLE_UNPACK` does the same inside), so a list is allocated and freed first.
    pub(in crate::python) fn eval_spread_tuple(&mut self, elts: &'a [Expr]) -> R<Value> {
        let items = self.eval_spread(elts)?;
        let list = self.alloc(ObjKind::List(items.clone()));
        for v in &items {
            self.heap.incref(*v);
        }
        self.heap.decref(Value::Obj(list));
        Ok(Value::Obj(self.alloc(ObjKind::Tuple(items))))
    }

    /// Stores `items` (owned) into `targets`, one of which is `*name`: it gets a new list of
    /// the items between those the other targets take.
    pub(in crate::python) fn unpack_starred(
        &mut self,
        targets: &'a [Expr],
        star: usize,
        mut items: Vec<Value>,
    ) -> R<()> {
        if targets.iter().filter(|t| t.is_starred_expr()).count() > 1 {
            self.heap.decref_all(items);
            return self.error("SyntaxError: multiple starred expressions in assignment");
        }
        let fixed = targets.len() - 1;
        if items.len() < fixed {
            let n = items.len();
            self.heap.decref_all(items);
            return self.error(format!(
                "ValueError: not enough values to unpack (expected at least {fixed}, got {n})"
            ));
        }
        let tail = items.split_off(items.len() - (fixed - star));
        let middle = items.split_off(star);
        let list = Value::Obj(self.alloc(ObjKind::List(middle)));
        let mut values = items;
        values.push(list);
        values.extend(tail);
        let mut pending = values.into_iter();
        for t in targets {
            let Some(v) = pending.next() else { break };
            let target = match t {
                Expr::Starred(s) => &*s.value,
                t => t,
            };
            if let Err(e) = self.store(target, v) {
                self.heap.decref_all(pending);
                return Err(e);
            }
        }
        Ok(())
    }
}
