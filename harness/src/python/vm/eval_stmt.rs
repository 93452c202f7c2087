//! Running the simple statements `compile_stmt.rs` compiles. Each releases what it holds
//! when an operand raises (CPython's stack unwinding; the tree walker's leaf leaked the
//! target's current value and container there).

use super::compile::VmCode;
use super::compile_stmt::{StmtCode, assert_test};
use crate::python::interp::{Flow, Interpreter, R};
use ruff_python_ast::Stmt;
use std::sync::atomic::{AtomicU64, Ordering};

static LEAVES: AtomicU64 = AtomicU64::new(0);

/// How many statements plain bodies ran as tree-walker leaves (`Instr::Exec`) in this
/// process: a script using only compiled statements leaves it unchanged.
pub fn statements_run_by_tree() -> u64 {
    LEAVES.load(Ordering::Relaxed)
}

impl<'a> Interpreter<'a> {
    /// Runs a statement the plain loop leaves to the tree walker, counted.
    pub(super) fn exec_leaf(&mut self, stmt: &'a Stmt) -> R<Flow> {
        LEAVES.fetch_add(1, Ordering::Relaxed);
        self.exec(stmt)
    }

    /// Runs a compiled simple statement, its per-statement work included.
    pub(super) fn run_stmt_code(&mut self, vm: &VmCode<'a>, code: StmtCode<'a>) -> R<()> {
        match code {
            StmtCode::AugName {
                stmt,
                op,
                name,
                value,
            } => {
                self.statement_start(stmt)?;
                let current = self.load_name(name)?;
                let rhs = self
                    .eval_compiled(vm, value)
                    .inspect_err(|_| self.heap.decref(current))?;
                let result = self.binary(op, current, rhs, true);
                self.heap.decref(current);
                self.heap.decref(rhs);
                self.store_name(name, result?);
            }
            StmtCode::AugAttr {
                stmt,
                op,
                obj,
                attr,
                value,
            } => {
                self.statement_start(stmt)?;
                let obj = self.eval_compiled(vm, obj)?;
                let r = self.aug_attr(vm, op, obj, attr, value);
                self.heap.decref(obj);
                r?;
            }
            StmtCode::AnnAssign {
                stmt,
                target,
                value,
            } => {
                self.statement_start(stmt)?;
                let v = self.eval_compiled(vm, value)?;
                self.store(target, v)?;
            }
            StmtCode::DelNames { stmt, targets } => {
                self.statement_start(stmt)?;
                for target in targets {
                    self.delete_target(target)?;
                }
            }
            StmtCode::DelAttr {
                stmt,
                target,
                obj,
                attr,
            } => {
                self.statement_start(stmt)?;
                let obj = self.eval_compiled(vm, obj)?;
                self.at(target);
                let old = self.take_attr_of(obj, attr);
                self.heap.decref(obj);
                match old {
                    Some(v) => self.heap.decref(v),
                    None => {
                        return self.error(format!("AttributeError: {}", self.names.name(attr)));
                    }
                }
            }
            StmtCode::Assert { stmt, test, msg } => {
                self.statement_start(stmt)?;
                let v = self.eval_compiled(vm, test)?;
                let t = self.truth(v);
                self.heap.decref(v);
                if !t? {
                    let args = match msg {
                        Some(m) => vec![self.eval_compiled(vm, m)?],
                        None => Vec::new(),
                    };
                    self.at(assert_test(stmt));
                    return self.raise_builtin("AssertionError", args);
                }
            }
            StmtCode::Def(code) => return self.run_def_stmt(vm, code),
            StmtCode::Subscript(code) => return self.run_subscript_stmt(vm, code),
        }
        self.statement_end()
    }

    /// `obj.attr op= value` on the container `obj` (borrowed).
    fn aug_attr(
        &mut self,
        vm: &VmCode<'a>,
        op: ruff_python_ast::Operator,
        obj: crate::heap::Value,
        attr: crate::heap::Sym,
        value: super::compile_expr::ExprCode<'a>,
    ) -> R<()> {
        let current = self.get_attr(obj, attr)?;
        let rhs = self
            .eval_compiled(vm, value)
            .inspect_err(|_| self.heap.decref(current))?;
        let result = self.binary(op, current, rhs, true);
        self.heap.decref(current);
        self.heap.decref(rhs);
        self.set_attr(obj, attr, result?)
    }
}
