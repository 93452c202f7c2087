//! Running compiled subscripts (`compile_subscript.rs`). Release order is CPython's:
//! `BINARY_SUBSCR`, `STORE_SUBSCR` and `DELETE_SUBSCR` drop the value stored, then the
//! container, then the index; an error unwinds what was evaluated, top first.

use super::compile::VmCode;
use super::compile_expr::ExprCode;
use super::compile_subscript::{DelTarget, SubStmt, SubscriptOp, Target};
use crate::heap::Value;
use crate::python::interp::{Interpreter, R};
use crate::python::natives::{self, Index};
use ruff_python_ast::Operator;

impl<'a> Interpreter<'a> {
    /// Runs a subscript op of an expression; the value to push.
    pub(super) fn run_subscript_op(&mut self, op: SubscriptOp<'a>) -> R<Value> {
        match op {
            SubscriptOp::Load { index, width, at } => {
                let from = self.expr_stack.len() - width as usize;
                let mut index = Index::from_values(index, self.expr_stack.drain(from..));
                let obj = self
                    .expr_stack
                    .pop()
                    .expect("the container is on the stack");
                self.offset = at;
                let v = natives::subscript(self, obj, &mut index);
                self.heap.decref(obj);
                index.release(self);
                v
            }
        }
    }

    /// Evaluates an index's compiled operands into an [`Index`].
    fn eval_index_code(&mut self, vm: &VmCode<'a>, code: ExprCode<'a>) -> R<Index> {
        // Values bound to split nodes (`split.rs`) are found by the tree evaluator only.
        if !self.vm_substitutes.is_empty() {
            return natives::eval_index(self, code.root);
        }
        let base = self.expr_stack.len();
        self.eval_depth += 1;
        let r = self.run_ops(vm, code);
        self.eval_depth -= 1;
        if let Err(e) = r {
            super::eval_expr_starred::unwound_to(base);
            while self.expr_stack.len() > base {
                let v = self.expr_stack.pop().expect("checked above");
                self.heap.decref(v);
            }
            return Err(e);
        }
        Ok(Index::from_values(code.root, self.expr_stack.drain(base..)))
    }

    /// The container and the index of a subscript target, evaluated in that order.
    fn eval_target(&mut self, vm: &VmCode<'a>, target: Target<'a>) -> R<(Value, Index)> {
        let obj = self.eval_compiled(vm, target.obj)?;
        let index = self
            .eval_index_code(vm, target.index)
            .inspect_err(|_| self.heap.decref(obj))?;
        Ok((obj, index))
    }

    /// Runs a compiled statement with a subscript target, its per-statement work included.
    pub(super) fn run_subscript_stmt(&mut self, vm: &VmCode<'a>, code: SubStmt<'a>) -> R<()> {
        match code {
            SubStmt::Assign {
                stmt,
                value,
                target,
            } => {
                self.statement_start(stmt)?;
                let v = self.eval_compiled(vm, value)?;
                self.store_item(vm, target, v)?;
            }
            SubStmt::Aug {
                stmt,
                op,
                target,
                value,
            } => {
                self.statement_start(stmt)?;
                let (obj, mut index) = self.eval_target(vm, target)?;
                self.at(target.node);
                let r = self.aug_item(vm, op, obj, &mut index, value);
                self.heap.decref(obj);
                index.release(self);
                r?;
            }
            SubStmt::Ann {
                stmt,
                value,
                target,
                annotation,
            } => {
                self.statement_start(stmt)?;
                match value {
                    Some(value) => {
                        let v = self.eval_compiled(vm, value)?;
                        self.store_item(vm, target, v)?;
                    }
                    None => {
                        // `check_ann_expr`/`check_ann_subscr`: evaluated and dropped.
                        let obj = self.eval_compiled(vm, target.obj)?;
                        self.heap.decref(obj);
                        let index = self.eval_index_code(vm, target.index)?;
                        index.release(self);
                    }
                }
                if self.annotations_evaluated() {
                    let a = self.eval_compiled(vm, annotation)?;
                    self.heap.decref(a);
                }
            }
            SubStmt::Del {
                stmt,
                target,
                first,
                last,
            } => {
                if first {
                    self.statement_start(stmt)?;
                }
                self.delete_compiled(vm, target)?;
                if !last {
                    return Ok(());
                }
            }
        }
        self.statement_end()
    }

    /// `container[index] = v` (taking `v`): the container and index evaluated after the
    /// value, as `STORE_SUBSCR` receives them.
    fn store_item(&mut self, vm: &VmCode<'a>, target: Target<'a>, v: Value) -> R<()> {
        let (obj, mut index) = self
            .eval_target(vm, target)
            .inspect_err(|_| self.heap.decref(v))?;
        self.at(target.node);
        let r = natives::store_subscript(self, obj, &mut index, v);
        self.heap.decref(obj);
        index.release(self);
        r
    }

    /// `obj[index] op= value` with the container and index evaluated once (borrowed):
    /// `__getitem__`, the value, the in-place operator (releasing its operands), then
    /// `__setitem__` of the result.
    fn aug_item(
        &mut self,
        vm: &VmCode<'a>,
        op: Operator,
        obj: Value,
        index: &mut Index,
        value: ExprCode<'a>,
    ) -> R<()> {
        let current = natives::subscript(self, obj, index)?;
        let rhs = self
            .eval_compiled(vm, value)
            .inspect_err(|_| self.heap.decref(current))?;
        self.at(value.root);
        let result = self.binary(op, current, rhs, true);
        self.heap.decref(current);
        self.heap.decref(rhs);
        natives::store_subscript(self, obj, index, result?)
    }

    /// One target of a compiled `del`.
    fn delete_compiled(&mut self, vm: &VmCode<'a>, target: DelTarget<'a>) -> R<()> {
        match target {
            DelTarget::Name(t) => self.delete_target(t),
            DelTarget::Attr { node, obj, attr } => {
                let obj = self.eval_compiled(vm, obj)?;
                self.at(node);
                let old = self.take_attr_of(obj, attr);
                self.heap.decref(obj);
                match old {
                    Some(v) => {
                        self.heap.decref(v);
                        Ok(())
                    }
                    None => self.error(format!("AttributeError: {}", self.names.name(attr))),
                }
            }
            DelTarget::Item(target) => {
                let (obj, mut index) = self.eval_target(vm, target)?;
                self.at(target.node);
                let r = natives::del_subscript(self, obj, &mut index);
                self.heap.decref(obj);
                index.release(self);
                r
            }
        }
    }

    /// Whether a non-simple annotation is evaluated here: in module and class bodies
    /// (CPython's `compiler_annassign`), not in function bodies.
    fn annotations_evaluated(&self) -> bool {
        self.frames
            .last()
            .is_none_or(|f| f.code.is_none() || !f.class_namespaces.is_empty())
    }
}
