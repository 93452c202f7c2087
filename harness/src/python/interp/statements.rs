//! The simple statements the VM leaves to the evaluator (`Instr::Exec` leaves:
//! assignments, `del`, imports, `def`, `class`, ...), the per-statement work around every
//! statement, and the iteration helpers the VM's loops use.

use super::{Flow, Interpreter, R};
use crate::heap::{ObjKind, Value};
use crate::python::natives;
use crate::python::scope::symbol;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;

impl<'a> Interpreter<'a> {
    // ----- statements -----------------------------------------------------------------------

    pub(in crate::python) fn exec(&mut self, stmt: &'a Stmt) -> R<Flow> {
        self.statement_start(stmt)?;
        let flow = self.exec_inner(stmt)?;
        self.statement_end()?;
        Ok(flow)
    }

    /// A statement begins: its offset and line become current; it counts one step.
    #[inline]
    pub(in crate::python) fn statement_start(&mut self, stmt: &'a Stmt) -> R<()> {
        let start = stmt.range().start().to_u32();
        self.offset = start;
        let line = self.map.file_line(start);
        if let Some(f) = self.frames.last_mut() {
            f.line = line;
        }
        self.budget_step()
    }

    /// A statement ended: pending finalizers and weak callbacks run, storages whose last
    /// tensor died are released.
    #[inline]
    pub(in crate::python) fn statement_end(&mut self) -> R<()> {
        self.run_due_finalizers()?;
        self.release_dropped_storages(None);
        Ok(())
    }

    fn exec_inner(&mut self, stmt: &'a Stmt) -> R<Flow> {
        match stmt {
            Stmt::Expr(e) => {
                let v = self.eval(&e.value)?;
                self.heap.decref(v);
            }
            Stmt::Assign(a) => self.exec_assign(a)?,
            Stmt::AugAssign(a) => self.exec_aug_assign(a)?,
            Stmt::AnnAssign(a) => {
                if let Some(value) = &a.value {
                    let v = self.eval(value)?;
                    self.store(&a.target, v)?;
                }
            }
            Stmt::Delete(d) => {
                for t in &d.targets {
                    self.delete(t)?;
                }
            }
            Stmt::Pass(_) | Stmt::Global(_) | Stmt::Nonlocal(_) => {}
            Stmt::Break(_) => return Ok(Flow::Break),
            Stmt::Continue(_) => return Ok(Flow::Continue),
            Stmt::Return(r) => {
                let v = match &r.value {
                    Some(e) => self.eval(e)?,
                    None => Value::None,
                };
                return Ok(Flow::Return(v));
            }
            // Compound statements are instructions (`vm/compile_plain.rs`); only the ones the
            // compiler leaves to a leaf reach here, and are refused.
            Stmt::For(f) if f.is_async => {
                self.at(f);
                return self.unsupported(crate::python::constructs::Construct::AsyncFor.what());
            }
            Stmt::If(_) | Stmt::For(_) | Stmt::While(_) => {
                unreachable!("`if`, `for` and `while` are compiled to instructions")
            }
            Stmt::FunctionDef(d) => {
                let mut decorators = Vec::with_capacity(d.decorator_list.len());
                for dec in &d.decorator_list {
                    match self.decorator(&dec.expression) {
                        Ok(v) => decorators.push(v),
                        Err(e) => {
                            self.heap.decref_all(decorators);
                            return Err(e);
                        }
                    }
                }
                let code = self.codes.of_def(d);
                let f = match self.make_function(code, Some(&d.parameters)) {
                    Ok(f) => f,
                    Err(e) => {
                        self.heap.decref_all(decorators);
                        return Err(e);
                    }
                };
                self.at(d);
                let f = self.decorate(decorators, f)?;
                let name = self.names.intern(d.name.as_str());
                self.store_name(name, f);
            }
            Stmt::ClassDef(c) => self.exec_class(c)?,
            Stmt::Import(i) => self.import_modules(i)?,
            Stmt::ImportFrom(i) => self.import_from(i)?,
            Stmt::Assert(a) => return self.exec_assert(a),
            Stmt::Raise(r) => return self.exec_raise(r),
            Stmt::With(w) if w.is_async => return self.exec_async_with(w),
            Stmt::Try(t) if t.is_star => return self.exec_try_star(t),
            Stmt::With(_) | Stmt::Try(_) => {
                unreachable!("`try` and `with` are compiled to instructions")
            }
            Stmt::Match(_) => {
                return self.unsupported(crate::python::constructs::Construct::Match.what());
            }
            Stmt::TypeAlias(_) => {
                return self.unsupported(crate::python::constructs::Construct::TypeAliases.what());
            }
            Stmt::IpyEscapeCommand(_) => {
                return self
                    .unsupported(crate::python::constructs::Construct::IpythonEscapes.what());
            }
        }
        Ok(Flow::Normal)
    }

    pub(in crate::python) fn exec_assign(&mut self, a: &'a ast::StmtAssign) -> R<()> {
        // `a, b = x, y` with up to three names is compiled without building a tuple.
        if let ([Expr::Tuple(targets)], Expr::Tuple(values)) = (a.targets.as_slice(), &*a.value)
            && targets.elts.len() == values.elts.len()
            && targets.elts.len() <= 3
            && !values.elts.iter().any(|e| matches!(e, Expr::Starred(_)))
            && !targets.elts.iter().any(|e| matches!(e, Expr::Starred(_)))
        {
            let mut vals = Vec::with_capacity(values.elts.len());
            for e in &values.elts {
                vals.push(self.eval(e)?);
            }
            for (t, v) in targets.elts.iter().zip(vals) {
                self.store(t, v)?;
            }
            return Ok(());
        }
        let v = self.eval(&a.value)?;
        for (i, target) in a.targets.iter().enumerate() {
            if i + 1 < a.targets.len() {
                self.heap.incref(v);
            }
            self.store(target, v)?;
        }
        Ok(())
    }

    fn exec_aug_assign(&mut self, a: &'a ast::StmtAugAssign) -> R<()> {
        match &*a.target {
            Expr::Name(n) => {
                let sym = symbol(&n.node_index, n.id.as_str(), &mut self.names);
                let current = self.load_name(sym)?;
                let rhs = self.eval(&a.value)?;
                let result = self.binary(a.op, current, rhs, true)?;
                self.heap.decref(current);
                self.heap.decref(rhs);
                self.store_name(sym, result);
            }
            Expr::Attribute(at) => {
                let obj = self.eval(&at.value)?;
                let attr = symbol(&at.attr.node_index, at.attr.as_str(), &mut self.names);
                let current = self.get_attr(obj, attr)?;
                let rhs = self.eval(&a.value)?;
                let result = self.binary(a.op, current, rhs, true)?;
                self.heap.decref(current);
                self.heap.decref(rhs);
                self.set_attr(obj, attr, result)?;
                self.heap.decref(obj);
            }
            Expr::Subscript(s) => {
                // The container and the index once (`x[f()] += 1` calls `f` once).
                let obj = self.eval(&s.value)?;
                let mut index = match natives::eval_index(self, &s.slice) {
                    Ok(i) => i,
                    Err(e) => {
                        self.heap.decref(obj);
                        return Err(e);
                    }
                };
                let r = self.aug_subscript(a, obj, &mut index);
                self.heap.decref(obj);
                index.release(self);
                r?;
            }
            _ => return self.unsupported("this augmented assignment target"),
        }
        Ok(())
    }

    /// The `index`-th item of an iterable (a new reference), or `None` past the end.
    pub(in crate::python) fn next_item(
        &mut self,
        iterable: Value,
        index: usize,
    ) -> R<Option<Value>> {
        match iterable {
            Value::Obj(id) => {
                match self.heap.kind(id) {
                    ObjKind::List(items)
                    | ObjKind::Tuple(items)
                    | ObjKind::Deque { items, .. }
                    | ObjKind::NamedTuple { items, .. } => {
                        let item = items.get(index).copied();
                        if let Some(v) = item {
                            self.heap.incref(v);
                        }
                        Ok(item)
                    }
                    ObjKind::Dict(items) => {
                        let item = items.get(index).map(|(k, _)| *k);
                        if let Some(v) = item {
                            self.heap.incref(v);
                        }
                        Ok(item)
                    }
                    ObjKind::Set { table, .. } => {
                        let item = table.nth(index);
                        if let Some(v) = item {
                            self.heap.incref(v);
                        }
                        Ok(item)
                    }
                    &ObjKind::Range { start, stop, step } => Ok(
                        crate::python::int_ops::range_item(start, stop, step, index as u64)
                            .map(Value::Int),
                    ),
                    ObjKind::Instance { .. } => self.user_next(iterable),
                    ObjKind::Wrapper(..) => self.lazy_next(id),
                    ObjKind::Generator(_) => self.generator_next(id),
                    other => {
                        let t = other.type_name();
                        self.error(format!(
                            "TypeError: '{t}' object is not iterable in the workload model"
                        ))
                    }
                }
            }
            _ => self.error("TypeError: object is not iterable"),
        }
    }

    /// Whether the loop starting now (identified by its iterable or condition) is the one
    /// whose passes are the iterations: the loop marked `# gpumem: measure`, else the first
    /// outermost loop to run (one of the module body's own loops when it has any);
    /// either only on its first run.
    pub(in crate::python) fn claims_iteration_loop(
        &self,
        key: crate::python::measured_loop::LoopKey,
    ) -> bool {
        !self.iteration_loop_seen
            && match self.measured_loop {
                Some(marked) => marked == key,
                None => {
                    self.loop_depth == 0
                        && (self.module_loops.is_empty() || self.module_loops.contains(&key))
                }
            }
    }

    /// Names the loop marked `# gpumem: measure` (see python/measured_loop.rs).
    pub fn set_measured_loop(&mut self, key: Option<crate::python::measured_loop::LoopKey>) {
        self.measured_loop = key;
    }
}

impl<'a> Interpreter<'a> {
    /// `del target` of one target (the VM's compiled `del`, `vm/eval_stmt.rs`).
    pub(in crate::python) fn delete_target(&mut self, target: &'a Expr) -> R<()> {
        self.delete(target)
    }

    /// Unbinds `obj.name` and hands its value over (the VM's compiled `del obj.name`).
    pub(in crate::python) fn take_attr_of(
        &mut self,
        obj: Value,
        name: crate::heap::Sym,
    ) -> Option<Value> {
        self.take_attr(obj, name)
    }
}

impl<'a> Interpreter<'a> {
    /// `obj[index] op= value` once the container and index are evaluated (both borrowed):
    /// `__getitem__`, the value, the in-place operator, `__setitem__`.
    fn aug_subscript(
        &mut self,
        a: &'a ast::StmtAugAssign,
        obj: Value,
        index: &mut natives::Index,
    ) -> R<()> {
        let current = natives::subscript(self, obj, index)?;
        let rhs = self
            .eval(&a.value)
            .inspect_err(|_| self.heap.decref(current))?;
        let result = self.binary(a.op, current, rhs, true);
        self.heap.decref(current);
        self.heap.decref(rhs);
        natives::store_subscript(self, obj, index, result?)
    }
}
