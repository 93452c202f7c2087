//! List comprehensions (and the shared comprehension loop).

use super::{Interpreter, R};
use crate::heap::{Function, ObjId, ObjKind, Sym, Value};
use crate::python::Interner;
use crate::python::scope::symbol;
use ruff_python_ast::{self as ast, Expr};

impl<'a> Interpreter<'a> {
    /// `[elt for target in iterable if cond ...]`, evaluated in place. The targets are the
    /// comprehension's own: the enclosing scope's bindings of those names come back after it.
    /// Up to 3.11 a comprehension is a function object created and dropped around the loop;
    /// from 3.12 it is inlined (PEP 709) and allocates none.
    pub(super) fn eval_list_comprehension(&mut self, c: &'a ast::ExprListComp) -> R<Value> {
        let mut targets = Vec::new();
        for g in &c.generators {
            if g.is_async {
                self.at(g);
                return self
                    .unsupported(crate::python::constructs::Construct::AsyncComprehensions.what());
            }
            collect_target_names(&g.target, &mut targets, &mut self.names);
        }
        let function = (self.heap.profile.version.minor <= 11).then(|| {
            ObjKind::Function(Function {
                code: 0,
                name: Sym(0),
                closure: None,
                defaults: Vec::new(),
                dict: None,
            })
        });
        if let Some(f) = &function {
            self.count_shape(f);
        }
        let frame = self.enter_comprehension_frame(c as *const _ as usize);
        let saved: Vec<(Sym, Option<Value>)> =
            targets.iter().map(|&n| (n, self.take_name(n))).collect();
        let list = self.alloc(ObjKind::List(Vec::new()));
        let result = self.comprehend(&c.generators, &c.elt, list);
        for (name, old) in saved {
            if let Some(inner) = self.take_name(name) {
                self.heap.decref(inner);
            }
            if let Some(v) = old {
                self.store_name(name, v);
            }
        }
        self.leave_comprehension_frame(frame);
        if let Some(f) = &function {
            self.heap.count_deallocation(f);
        }
        match result {
            Ok(()) => Ok(Value::Obj(list)),
            Err(e) => {
                self.heap.decref_id(list);
                Err(e)
            }
        }
    }

    /// ≤ 3.10 a comprehension's call runs in a frame object like any function's: its code
    /// object's zombie frame, allocated (and counted) on the first call only, since
    /// `_PyFrame_New_NoTrack` takes `code->co_zombieframe` when it is set and `frame_dealloc`
    /// parks the frame there again (Objects/frameobject.c, v3.8.18 – v3.10.13). Measured: a
    /// list, a set and a dict comprehension count 3 more on their first run on 3.8.18 –
    /// 3.10.13 than on 3.11.7, and the same on later runs. `node` identifies the
    /// comprehension (its AST node); returns what [`Self::leave_comprehension_frame`] needs.
    pub(in crate::python) fn enter_comprehension_frame(
        &mut self,
        node: usize,
    ) -> Option<(u32, bool)> {
        if !self.heap.profile.frame_objects {
            return None;
        }
        let next = u32::MAX - self.comprehension_codes.len() as u32;
        let code = *self.comprehension_codes.entry(node).or_insert(next);
        Some((code, self.enter_frame_object(code)))
    }

    pub(in crate::python) fn leave_comprehension_frame(&mut self, frame: Option<(u32, bool)>) {
        if let Some((code, used_zombie)) = frame {
            self.leave_frame_object(code, used_zombie);
        }
    }

    fn comprehend(
        &mut self,
        generators: &'a [ast::Comprehension],
        elt: &'a Expr,
        list: ObjId,
    ) -> R<()> {
        self.comprehension_loop(generators, None, &mut |it| {
            let v = it.eval(elt)?;
            if let ObjKind::List(items) = it.heap.kind_mut(list) {
                items.push(v);
            }
            Ok(true)
        })
        .map(|_| ())
    }
}

/// Names a `for` target binds (`i`, `(k, v)`).
fn collect_target_names(target: &Expr, out: &mut Vec<Sym>, names: &mut Interner) {
    match target {
        Expr::Name(n) => out.push(symbol(&n.node_index, n.id.as_str(), names)),
        Expr::Tuple(t) => t
            .elts
            .iter()
            .for_each(|e| collect_target_names(e, out, names)),
        Expr::List(t) => t
            .elts
            .iter()
            .for_each(|e| collect_target_names(e, out, names)),
        _ => {}
    }
}
